import time
from pathlib import Path

from tools.transport import ArtifactStore, Host, LocalTransport


def transport(tmp_path: Path) -> LocalTransport:
    return LocalTransport(tmp_path / "hosts", ArtifactStore(tmp_path / "artifacts"))


def test_runs_in_the_host_workdir_and_keeps_full_output_as_an_artifact(tmp_path):
    t = transport(tmp_path)
    host = Host(name="gpu-a")
    lines = []
    r = t.run(host, "pwd; echo err >&2; exit 3", timeout=10, on_line=lambda s, line: lines.append((s, line)))
    assert r.exit_code == 3 and not r.timed_out
    assert r.stdout_tail.strip().endswith("hosts/gpu-a")
    assert ("stderr", "err") in lines
    art = (tmp_path / "artifacts" / r.artifact).read_text()
    assert "--- stderr\nerr" in art


def test_timeout_kills_the_whole_process_group(tmp_path):
    t = transport(tmp_path)
    marker = tmp_path / "child-survived"
    started = time.monotonic()
    # The child outlives its parent shell unless the group is killed.
    r = t.run(Host(name="h"), f"(sleep 3; touch {marker}) & sleep 60", timeout=0.5)
    assert r.timed_out and r.killed and r.exit_code is None
    assert time.monotonic() - started < 5
    time.sleep(3.5)
    assert not marker.exists()
