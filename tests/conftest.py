"""Shared fixtures: an isolated $SIGNOFF_HOME, the real `signoff` CLI in a subprocess, and
campaign variants written next to the demo's simserve.py (so `{{campaign_dir}}` still finds it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO_DIR = ROOT / "examples" / "decode-campaign"
DEMO = DEMO_DIR / "campaign.yaml"
FIXTURES = Path(__file__).parent / "fixtures"
# `python -m agent.cli`, started by the worker's warm fork server (tests/forkserver.py): a process of its own that
# skips the ~0.8 s of imports. SIGNOFF_EXEC is the same command in a new interpreter, for the tests that signal a
# runner from outside or read its pid: a forked command outlives its launcher by the moment the server needs to
# see the launcher gone, and its pid is not the launcher's.
SIGNOFF = [sys.executable, "-I", "-S", str(ROOT / "tests" / "launch.py")]
SIGNOFF_EXEC = [sys.executable, "-m", "agent.cli"]

# The facts of a safety gate for an option that wedged under stress (shared by policy and decision tests).
SAFETY = {
    "option": "2",
    "verdict": "unsafe",
    "ab_verdict": "improved",
    "gain_pct": 6.0,
    "ci_low": 3.0,
    "ci_high": 9.0,
    "pairs": 6,
    "wedges": 2,
    "stress_errors": 0,
    "failed_requests": 0,
    "hazards": 1,
    "confidence": 0.9,
    "risk": "high",
}


# Sessions made once per worker and shared by the tests that read them: a test using one joins its group,
# so that one worker makes it for all of them (a test on another worker would make it again, ~10 s each).
SHARED = {
    "finished_session": "finished-demo",
    "finished_demo": "finished-demo",
    "demo_json": "demo",
    "calibrated_session": "calibrated-report",
}


def pytest_configure(config: pytest.Config) -> None:
    # The xdist controller (no workerinput, workers to start): write the rewritten test modules once for all of them.
    if not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None):
        from tests.rewrite_cache import warm

        warm(config)


@pytest.hookimpl(tryfirst=True)  # before xdist's loadgroup reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        group = next((g for name, g in SHARED.items() if name in fixtures), None)
        if group is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(group))
    # xdist hands out work in collection order: the longest tests go first, so that the last minute of a
    # run is short tests on every worker instead of one worker still in a long one.
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


@pytest.fixture(scope="session", autouse=True)
def forkserver() -> Iterator[None]:
    """This worker's fork server, for every SIGNOFF command of its tests. Until it is ready (about a second)
    and if it dies, the launcher starts a new interpreter instead: nothing waits for it."""
    work = Path(tempfile.mkdtemp(prefix="signoff-fs-"))  # short: a Unix socket's path has ~100 bytes
    path = work / "sock"
    with (work / "log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.forkserver", str(path), str(os.getpid())],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    os.environ["SIGNOFF_TEST_FORKSERVER"] = str(path)
    try:
        yield
    finally:
        os.environ.pop("SIGNOFF_TEST_FORKSERVER", None)
        proc.terminate()  # the server this worker started, by its own pid
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(work, ignore_errors=True)


def run_until_benchmarking(
    home: Path, campaign: Path, stderr: int, *, command: list[str] = SIGNOFF_EXEC
) -> subprocess.Popen[bytes]:
    """`signoff run` in its own process, returned once its journal shows three benchmark runs. A new
    interpreter by default: the tests that use it signal the runner or read its pid."""
    env = {**os.environ, "SIGNOFF_HOME": str(home)}
    proc = subprocess.Popen(
        [*command, "run", str(campaign), "--json"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=stderr
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = list((home / "sessions").glob("*/journal.jsonl"))
        if found and found[0].read_text().count('"bench.run"') >= 3:
            return proc
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the run never reached its benchmark")


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = tmp_path / "signoff-home"
    monkeypatch.setenv("SIGNOFF_HOME", str(h))
    return h


@pytest.fixture
def cli(home: Path) -> Callable[..., Result]:
    def run(*args: str, timeout: float = 180) -> Result:
        env = {**os.environ, "SIGNOFF_HOME": str(home), "USER": "tester", "COLUMNS": "200"}
        p = subprocess.run([*SIGNOFF, *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
        return Result(p.returncode, p.stdout, p.stderr)

    return run


def fast(text: str, *, confirm: bool = False) -> str:
    """The demo campaign with shorter sleeps: same model, same seed, same story, less waiting; and without the
    end-of-campaign confirmation A/B (a seventh of a demo run's time), which its own tests, the shared finished
    demo (`confirm=True`) and `signoff demo` keep."""
    if not confirm and "\nconfirm:" not in text:
        text = text.rstrip("\n") + "\nconfirm: false\n"
    text = text.replace("--wall 0.2", "--wall 0.02").replace("timeout: 2, runs: 3", "timeout: 1, runs: 3")
    text = text.replace("stress abort-cascade --requests 200", "stress abort-cascade --requests 200 --wall 0")
    text = text.replace(
        'stress idle-busy-bursts", on: gpu-a, timeout: 2', 'stress idle-busy-bursts", on: gpu-a, timeout: 1'
    )
    return text.replace("stress idle-busy-bursts", "stress idle-busy-bursts --wall 0")


@pytest.fixture(scope="session")
def finished_demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """One uninterrupted run of the fast demo (cautious policy), made once for the tests that only
    read a finished session back: copy it into a test's home with `finished_session`."""
    home = tmp_path_factory.mktemp("finished-demo")
    campaign = DEMO_DIR / f".test-shared-{os.getpid()}.yaml"
    campaign.write_text(fast(DEMO.read_text(), confirm=True))
    try:
        env = {**os.environ, "SIGNOFF_HOME": str(home), "USER": "tester", "COLUMNS": "200"}
        args = [*SIGNOFF, "run", str(campaign), "--json"]
        p = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT)
    finally:
        campaign.unlink(missing_ok=True)
    assert p.returncode == 0, p.stderr
    return home, json.loads(p.stdout)


@pytest.fixture(scope="session")
def demo_json(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`signoff demo --json` run once (the real demo, not the fast variant), for the tests that read its
    outcome; they carry xdist_group("demo") so that one worker makes it for all of them."""
    home = tmp_path_factory.mktemp("demo-json")
    env = {**os.environ, "SIGNOFF_HOME": str(home), "USER": "tester", "COLUMNS": "200"}
    p = subprocess.run([*SIGNOFF, "demo", "--json"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=180)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.fixture
def finished_session(finished_demo: tuple[Path, dict[str, Any]], home: Path) -> dict[str, Any]:
    """A private copy of the shared finished session under this test's $SIGNOFF_HOME (its `--json` output,
    with `journal` pointing at the copy)."""
    source, out = finished_demo
    shutil.copytree(source / "sessions" / out["session"], home / "sessions" / out["session"])
    return {**out, "journal": str(home / "sessions" / out["session"] / "journal.jsonl")}


@pytest.fixture
def variant(tmp_path: Path) -> Callable[..., Path]:
    """Write a campaign variant beside simserve.py; removed after the test."""
    made: list[Path] = []

    def make(text: str | None = None, *, edit: Callable[[str], str] | None = None, name: str = "variant") -> Path:
        body = text if text is not None else fast(DEMO.read_text())
        if edit is not None:
            body = edit(body)
        path = DEMO_DIR / f".test-{name}-{os.getpid()}-{len(made)}.yaml"
        path.write_text(body)
        made.append(path)
        return path

    yield make
    for p in made:
        p.unlink(missing_ok=True)


@pytest.fixture
def toolbox(home: Path, variant: Callable[..., Path]) -> Iterator[tuple[Any, Path, Any]]:
    """An investigation subagent's tools for option #2 of a fresh demo session under `cautious` (a README in gpu-a's
    working directory): (the toolbox, that directory, the session)."""
    from agent.exec.investigation import HostToolbox
    from agent.run.create import create
    from agent.run.runner import Runner

    d = create(variant(), "cautious")
    runner = Runner(d)
    workdir = Path(runner.ctx.transport.workdir(runner.ctx.campaign.hosts[0]))
    (workdir / "README").write_text("hello\n")
    yield HostToolbox(runner.ctx, runner.ctx.campaign.option(2), "investigator#2"), workdir, d
    runner.journal.close()


def journal_events(path: str | Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _server(start: Callable[[], Any], unavailable: type[Exception], what: str, required_env: str) -> Any:
    """A test server, or a skip naming why there is none (a failure where CI sets `required_env`)."""
    try:
        return start()
    except unavailable as exc:
        if os.environ.get(required_env):
            pytest.fail(f"{what} required but unavailable: {exc}")
        pytest.skip(str(exc))


@pytest.fixture(scope="session")
def sshd():
    """A real OpenSSH server on 127.0.0.1 for the whole test session."""
    from tests import sshd as harness

    server = _server(harness.start, harness.SSHDUnavailable, "sshd", "SIGNOFF_SSHD_REQUIRED")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server on 127.0.0.1 for the whole test session (one per xdist worker)."""
    from tests import pg

    server = _server(pg.start, pg.PostgresUnavailable, "PostgreSQL", "SIGNOFF_PG_REQUIRED")
    yield server
    server.stop()


def ed25519_keypair(directory: Path, name: str) -> tuple[Path, Path]:
    """A fresh Ed25519 signing key (PKCS#8 PEM) and its public key (SubjectPublicKeyInfo PEM)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    private, public = directory / f"{name}.pem", directory / f"{name}.pub.pem"
    private.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    public.write_bytes(
        key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return private, public


@pytest.fixture
def ssh_transport(sshd, tmp_path):
    from tools.artifacts import ArtifactStore
    from tools.ssh import KnownHosts, SSHTransport

    t = SSHTransport(
        ArtifactStore(tmp_path / "artifacts"), KnownHosts([sshd.known_hosts], None), session=f"t{os.getpid()}"
    )
    yield t
    t.close()
