"""Secrets must not leak through the shape of their value (issue 19, H3).

A value that ends in a newline, spans lines or straddles a read boundary was found whole in artifacts
and in checkpoints.sqlite, and a newline in one secret shifted the next one's value (`read -r` per
line). Every test runs a real command through the real LocalTransport and the real SSH transport
against the test sshd; the end-to-end ones look at every byte the session wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from agent.exec.planning import Cleared, clear, plan
from agent.models import Campaign, CommandSpec
from tests.conftest import ROOT, SIGNOFF
from tools.artifacts import ArtifactStore
from tools.commands import classify
from tools.output import StreamSink
from tools.secrets import Redactor
from tools.transport import CommandResult, Host, LocalTransport, Transport

TRAILING = "s3cr3t-value\n"
MULTILINE = "line-one-AAAA\nline-two-BBBB"
STRADDLE = "straddle-CCCC-secret"
READ = 65536  # what LocalTransport reads at once (read1) and what StreamSink cut long lines at

# What must never be written anywhere, for each secret: the value and every form a reader could use.
FORBIDDEN = {
    "A_TOKEN": [TRAILING, TRAILING.strip()],
    "B_TOKEN": [MULTILINE, *MULTILINE.splitlines()],
    "C_TOKEN": [STRADDLE],
}
VALUES = {"A_TOKEN": TRAILING, "B_TOKEN": MULTILINE, "C_TOKEN": STRADDLE}
# In the commands below `{{NAME}}` is left unquoted on purpose: it renders as "$NAME", quotes included.


@dataclass
class Ran:
    result: CommandResult
    stdout: bytes  # the artifact files, byte for byte as on disk
    stderr: bytes
    lines: list[str] = field(default_factory=list)  # what on_line (the screen, the TUI) was given

    def everything(self) -> bytes:
        shown = self.result.command + self.result.stdout_tail + self.result.stderr_tail + "\n".join(self.lines)
        return shown.encode() + self.stdout + self.stderr


@dataclass
class Rig:
    """One transport with a Redactor for `secrets`, and the way signoff really runs a command on it."""

    transport: Transport
    host: Host
    artifacts: Path
    secrets: dict[str, str]

    def planned(self, template: str) -> Cleared:
        """`template` as plan() renders it for this host, cleared as the command policy clears it under `allow:
        ["*"]` (or as a person approves what it asks about): the real secret delivery."""
        names = set(self.secrets)
        campaign = Campaign.model_validate(
            {
                "name": "leaks",
                "goal": {"text": "t"},
                "hosts": [self.host.model_dump()],
                "secrets": sorted(names),
                "benchmark": {"run": "true"},
                "options": [{"id": 1, "title": "t", "apply": [{"run": "true"}], "revert": [{"run": "true"}]}],
            }
        )
        # plan() needs only these of a RunContext; the rest (journal, policy, brain) plays no part in delivery.
        ctx: Any = SimpleNamespace(
            campaign=campaign,
            campaign_dir=self.artifacts,
            session="leaks",
            secrets=self.secrets,
            secret_names=lambda: names,
            transport=self.transport,
        )
        (p,) = plan(ctx, CommandSpec(run=template))
        cleared = clear(p, classify(p.command, allow=["*"], ask=[], deny=[]), approved={p.command})
        assert cleared is not None, p.command
        return cleared

    def run(self, template: str, *, timeout: float = 20) -> Ran:
        p = self.planned(template)
        lines: list[str] = []
        r = self.transport.run(
            p.host, p.script, timeout=timeout, stdin=p.planned.stdin, on_line=lambda _s, line: lines.append(line)
        )
        assert r.error is None, r.error
        return Ran(r, self._read(r.artifact), self._read(r.stderr_artifact), lines)

    def _read(self, artifact: str | None) -> bytes:
        return (self.artifacts / artifact).read_bytes() if artifact else b""


@pytest.fixture(params=["local", "ssh"])
def rig(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Rig]]:
    made: list[Transport] = []

    def make(secrets: dict[str, str], *, redacted: bool = True) -> Rig:
        redact = Redactor(secrets.values()) if redacted else str
        store = ArtifactStore(tmp_path / "artifacts")
        if request.param == "local":
            t: Transport = LocalTransport(tmp_path / "hosts", store, redact=redact)
            host = Host(name="box")
        else:
            from tools.ssh import KnownHosts, SSHTransport

            sshd = request.getfixturevalue("sshd")
            t = SSHTransport(store, KnownHosts([sshd.known_hosts], None), redact=redact, session=f"l{os.getpid()}")
            host = sshd.host(name="box")
        made.append(t)
        return Rig(t, host, tmp_path / "artifacts", secrets)

    yield make
    for t in made:
        t.close()


def assert_clean(data: bytes, name: str, where: str = "output") -> None:
    for form in FORBIDDEN[name]:
        assert form.encode() not in data, f"{name} leaked as {form!r} in {where}"


def test_a_secret_ending_in_a_newline_is_masked_with_and_without_it(rig: Callable[..., Rig]) -> None:
    r = rig({"A_TOKEN": TRAILING}).run(
        """printf '%s' {{A_TOKEN}}; echo {{A_TOKEN}}; printf '[%s]\\n' {{A_TOKEN}} >&2"""
    )
    assert_clean(r.everything(), "A_TOKEN")
    assert r.stdout.count(b"***") >= 2 and b"***" in r.stderr  # the command did print it, masked


def test_no_line_of_a_multi_line_secret_appears_alone(rig: Callable[..., Rig]) -> None:
    r = rig({"B_TOKEN": MULTILINE}).run(
        """printf '%s\\n' {{B_TOKEN}}; printf '%s\\n' {{B_TOKEN}} | while IFS= read -r l; do echo "got:$l"; done"""
    )
    assert_clean(r.everything(), "B_TOKEN")
    assert r.stdout.count(b"got:***") == 2


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_secret_straddling_the_read_boundary_is_masked(rig: Callable[..., Rig], stream: str) -> None:
    redirect = " >&2" if stream == "stderr" else ""
    r = rig({"C_TOKEN": STRADDLE}).run(f"""printf '%{READ - 3}s%s' '' {{{{C_TOKEN}}}}{redirect}""")
    out = r.stdout if stream == "stdout" else r.stderr
    assert_clean(r.everything(), "C_TOKEN")
    assert out == b" " * (READ - 3) + b"***"


@pytest.mark.parametrize("chunk", [1, 2, 7, READ - 3, READ])
def test_the_stream_redactor_masks_a_value_split_at_any_read(tmp_path: Path, chunk: int) -> None:
    redact = Redactor([TRAILING, MULTILINE, STRADDLE])
    data = b"x" * (READ - 3) + STRADDLE.encode() + b"|" + TRAILING.encode() + MULTILINE.encode() + b"\nend"
    sink = StreamSink("stdout", ArtifactStore(tmp_path / "a"), None, redact)
    for i in range(0, len(data), chunk):
        sink.feed(data[i : i + chunk])
    tail, _, name = sink.close()
    written = (tmp_path / "a" / name).read_bytes()
    assert written == b"x" * (READ - 3) + b"***|******\nend"
    assert tail == written.decode()


def test_the_held_back_tail_is_only_what_could_still_become_a_secret(tmp_path: Path) -> None:
    seen: list[str] = []
    sink = StreamSink("stdout", ArtifactStore(tmp_path / "a"), lambda _s, line: seen.append(line), Redactor([STRADDLE]))
    sink.feed(b"progress 10%\nprogress 20%\n")  # nothing here can start the secret: shown at once
    assert seen == ["progress 10%", "progress 20%"]
    sink.feed(b"key=stradd")
    sink.feed(b"le-CCCC-secret!\n")
    sink.close()
    assert seen[-1] == "key=***!"


def test_the_text_redactor_masks_every_form_but_trivial_lines() -> None:
    redact = Redactor([TRAILING, MULTILINE, 'pa"ss\\word-x\nab'])
    assert redact(f"{TRAILING.strip()}|{json.dumps(MULTILINE)}|line-two-BBBB") == '***|"***"|***'
    # The JSON-escaped form of a value (a command emitting JSON) is masked; a 2-character line is not.
    assert redact(json.dumps('pa"ss\\word-x') + " ab") == '"***" ab'


SHAPES = {
    "A_TOKEN": "first\nline\n",
    "B_TOKEN": "second-value",
    "C_TOKEN": "\r\ncr\ttab \\back %d %s $(touch pwned) `id` 'q' \"dq\" \\n \\0101",
    "D_TOKEN": "é-ünï-日本",
    "E_TOKEN": "  lead and trail  ",
    "F_TOKEN": "",
    "G_TOKEN": "-n",
    "H_TOKEN": "trailing-newlines\n\n\n",
    "I_TOKEN": "\n",
}


def test_every_secret_arrives_byte_exact_whatever_it_holds(rig: Callable[..., Rig]) -> None:
    names = list(SHAPES)
    dump = "; ".join(f"""printf '%s' {{{{{n}}}}} | od -An -v -tx1 | tr -d ' \\n'; echo""" for n in names)
    r = rig(SHAPES, redacted=False).run(dump)
    got = [bytes.fromhex(line) for line in r.stdout.decode().split("\n")[: len(names)]]
    assert dict(zip(names, got, strict=True)) == {n: v.encode() for n, v in SHAPES.items()}
    assert r.result.exit_code == 0


def test_a_secret_holding_a_nul_byte_is_refused_not_cut_short(rig: Callable[..., Rig]) -> None:
    # No shell variable can hold a NUL: delivering it would silently truncate the value.
    with pytest.raises(ValueError, match=r"N_TOKEN.*NUL"):
        rig({"N_TOKEN": "before\0after"}).run("printf %s {{N_TOKEN}}")


def test_secrets_stay_off_the_command_line_and_out_of_the_script(rig: Callable[..., Rig]) -> None:
    p = rig(VALUES).planned("echo {{A_TOKEN}} {{B_TOKEN}} {{C_TOKEN}}")
    for name in VALUES:
        for form in FORBIDDEN[name]:
            assert form not in p.script and form not in p.planned.command


# ------------------------------------------------------------------ end to end, through the CLI


def campaign_file(tmp_path: Path, host: str) -> Path:
    d = tmp_path / "leak-campaign"
    d.mkdir(exist_ok=True)
    (d / "simserve.py").write_text((ROOT / "examples/decode-campaign/simserve.py").read_text())
    (d / "campaign.yaml").write_text(f"""\
name: leak-mini
goal: {{text: secrets of every shape}}
hosts:
  - {host}
vars: {{simserve: "{{{{python}}}} simserve.py"}}
secrets: [A_TOKEN, B_TOKEN, C_TOKEN]
baseline:
  upload: [{{src: simserve.py}}]
  setup: ["{{{{simserve}}}} init --seed 3"]
  health: ["{{{{simserve}}}} health"]
benchmark:
  run: "{{{{simserve}}}} bench --wall 0.01"
  on: box
  num_prompts: 900
  pairs: 5
  max_pairs: 5
  timeout: 20
stress: [{{name: bursts, run: "{{{{simserve}}}} stress idle-busy-bursts --wall 0.01", on: box, timeout: 5}}]
options:
  - id: 1
    title: occupancy
    apply:
      - run: "{{{{simserve}}}} apply moe-occupancy"
      - run: printf '%s' {{{{A_TOKEN}}}} > a.bin
      - run: printf '%s' {{{{B_TOKEN}}}} > b.bin
      - run: printf '%s' {{{{C_TOKEN}}}} > c.bin
      - run: printf '%s' {{{{A_TOKEN}}}}
      - run: echo {{{{A_TOKEN}}}}
      - run: echo {{{{B_TOKEN}}}}
      - run: printf '%{READ - 3}s%s' '' {{{{C_TOKEN}}}}
    revert: ["{{{{simserve}}}} revert moe-occupancy"]
""")
    return d / "campaign.yaml"


@pytest.mark.parametrize("where", ["local", "ssh"])
def test_no_form_of_any_secret_reaches_the_journal_checkpoints_or_artifacts(
    request: pytest.FixtureRequest, tmp_path: Path, home: Path, where: str
) -> None:
    if where == "ssh":
        sshd = request.getfixturevalue("sshd")
        host = (
            f"{{name: box, transport: ssh, address: 127.0.0.1, port: {sshd.port}, user: {sshd.user}, "
            f'key_path: {sshd.client_key}, known_hosts: "{sshd.known_hosts}", roles: [decode]}}'
        )
    else:
        host = "{name: box, roles: [decode]}"
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        (ROOT / "policies/presets/cautious.yaml")
        .read_text()
        .replace('allow: ["python* *simserve.py *"', 'allow: ["printf *", "python* *simserve.py *"')
    )
    p = subprocess.run(
        [*SIGNOFF, "run", str(campaign_file(tmp_path, host)), "--policy", str(policy), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "SIGNOFF_HOME": str(home), **VALUES},
        timeout=180,
    )
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    session = Path(out["journal"]).parent
    # Nothing signoff wrote or printed holds any form of any secret: journal, checkpoints.sqlite
    # (and its WAL), artifacts, meta. The local host's own working directory is the host, not a record.
    records = [f for f in session.rglob("*") if f.is_file() and (session / "hosts") not in f.parents]
    assert any(f.name.startswith("checkpoints.sqlite") for f in records)
    assert any(f.parent.name == "artifacts" for f in records)
    for name in VALUES:
        assert_clean((p.stdout + p.stderr).encode(), name, "the CLI's output")
        for f in records:
            assert_clean(f.read_bytes(), name, str(f.relative_to(session)))
    # …while the host (here its working directory) got each value byte for byte, none shifted into another.
    workdir = sshd.home / "signoff" / out["session"] / "box" if where == "ssh" else session / "hosts" / "box"
    for name, file in (("A_TOKEN", "a.bin"), ("B_TOKEN", "b.bin"), ("C_TOKEN", "c.bin")):
        assert (workdir / file).read_bytes() == VALUES[name].encode(), name
    finished = [
        e for e in map(json.loads, Path(out["journal"]).read_text().splitlines()) if e["kind"] == "command.finished"
    ]
    assert any("***" in (e.get("result") or {}).get("stdout_tail", "") for e in finished)
