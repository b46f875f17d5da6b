"""The example campaigns on real servers (examples/redis, examples/postgres), end to end: what is installed,
the campaign derived for a test (shorter, optionally over SSH), a headless run whose pauses are answered the
way a person would, commands run in a host's working directory, and the servers stopped by their PIDs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import procs
from tests.conftest import ROOT, SIGNOFF

EXAMPLES = ROOT / "examples"


# ---------------------------------------------------------------- what is installed


def pg_bindir() -> Path | None:
    """The PostgreSQL server programs' directory, as pgctl.sh finds it."""
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    if out and (Path(out) / "initdb").exists():
        return Path(out)
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: _version_key(p.parent.parent.name))
    return found[-1].parent if found else None


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", name)) or (0,)


def pg_sharedir(bindir: Path) -> Path:
    """Where postgresql.conf.sample lives for the server in `bindir` (Debian: /usr/share/postgresql/N)."""
    try:
        out = subprocess.run(
            [str(bindir / "pg_config"), "--sharedir"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return Path(out or f"/usr/share/postgresql/{bindir.parent.name}")


def redis_missing() -> str | None:
    for tool in ("redis-server", "redis-cli", "redis-benchmark", "redis-check-aof"):
        if shutil.which(tool) is None:
            return f"{tool} not installed (make test installs redis-server and redis-tools as root)"
    if not Path("/etc/redis/redis.conf").exists():
        return "/etc/redis/redis.conf (Redis's shipped config, read by option 2's probe) is missing"
    return None


def pg_missing() -> str | None:
    bindir = pg_bindir()
    if bindir is None:
        return "PostgreSQL server programs not found (make test installs postgresql as root)"
    for tool in ("psql", "pgbench"):
        if shutil.which(tool) is None:
            return f"{tool} not on PATH (install postgresql-client)"
    if not (bindir / "pg_amcheck").exists():
        return f"{bindir}/pg_amcheck missing (PostgreSQL 14 or newer)"
    if not (pg_sharedir(bindir) / "postgresql.conf.sample").exists():
        return f"{pg_sharedir(bindir)}/postgresql.conf.sample missing"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no postgres user to run the server as"
    return None


def llamacpp_home() -> Path | None:
    """build.sh's cache (llama-server, llama-batched-bench, the model, llama.cpp's docs), when it is complete."""
    try:
        p = subprocess.run(
            ["sh", str(EXAMPLES / "llamacpp" / "build.sh"), "--where"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(p.stdout.strip()) if p.returncode == 0 and p.stdout.strip() else None


def llamacpp_missing() -> str | None:
    if llamacpp_home() is None:
        return "llama.cpp not built (make test builds it with examples/llamacpp/build.sh when cmake and g++ exist)"
    return None


def require(missing: str | None, what: str, required_env: str) -> None:
    """Skip with the reason — or fail, where CI says the system must be there."""
    if missing is None:
        return
    if os.environ.get(required_env):
        pytest.fail(f"{what} required ({required_env}=1) but unavailable: {missing}")
    pytest.skip(missing)


def redis_version() -> str:
    out = subprocess.run(["redis-server", "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"v=(\d[\d.]*)", out)
    assert m, out
    return m.group(1)


def hugepages_total() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("HugePages_Total:"):
            return int(line.split()[1])
    return 0


# ---------------------------------------------------------------- the campaign, derived for a test


def edit(text: str, *replacements: tuple[str, str]) -> str:
    """Exact replacements, each of which must apply: a changed example fails here, not silently."""
    for old, new in replacements:
        assert old in text, f"the example campaign no longer contains {old!r}"
        text = text.replace(old, new)
    return text


def ssh_host_entry(name: str, roles: list[str], server: Any) -> str:
    return (
        f"- {{name: {name}, transport: ssh, address: 127.0.0.1, port: {server.port}, user: {server.user},\n"
        f'     key_path: {server.client_key}, known_hosts: "{server.known_hosts}", roles: [{", ".join(roles)}]}}'
    )


# ---------------------------------------------------------------- where the hosts are, and running there


@dataclass
class Hosts:
    """The campaign's hosts and how a test reaches their working directories afterwards."""

    names: list[str]
    transport: str  # local | ssh
    home: Path  # $SIGNOFF_HOME of the run
    server: Any = None  # tests.sshd.SSHServer for ssh
    _ssh: Any = None

    def workdir(self, session: str, host: str) -> Path:
        if self.transport == "ssh":
            return self.server.home / "signoff" / session / host
        return self.home / "sessions" / session / "hosts" / host

    def run(self, session: str, host: str, command: str, timeout: float = 60) -> tuple[int | None, str]:
        """(exit code, output) of `command` in the host's working directory, as the campaign runs it there."""
        workdir = self.workdir(session, host)
        if self.transport == "local":
            p = subprocess.run(["sh", "-c", command], cwd=workdir, capture_output=True, text=True, timeout=timeout)
            return p.returncode, (p.stdout + p.stderr).strip()
        result = self._transport().run(self.server.host(host), command, timeout=timeout, cwd=str(workdir))
        return result.exit_code, (result.error or (result.stdout_tail + result.stderr_tail)).strip()

    def _transport(self) -> Any:
        if self._ssh is None:
            from tools.artifacts import ArtifactStore
            from tools.ssh import KnownHosts, SSHTransport

            self._ssh = SSHTransport(
                ArtifactStore(self.home / "test-artifacts"),
                KnownHosts([self.server.known_hosts], None),
                session=f"realsys-{os.getpid()}",
            )
        return self._ssh

    def close(self) -> None:
        if self._ssh is not None:
            self._ssh.close()
            self._ssh = None


def sessions(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "sessions").glob("*") if p.is_dir())


def short_home() -> Path:
    """A $SIGNOFF_HOME with a short path that other users may traverse: the postgres user must reach a
    local host's directory below it, and a UNIX socket path (./run/.s.PGSQL.5432) has at most 107 bytes
    — pytest's tmp_path is both too deep and private (0700) for that."""
    home = Path(tempfile.mkdtemp(prefix="signoff-rs-"))
    home.chmod(0o711)
    return home


def campaign_commands(campaign_yaml: Path, base: dict[str, str]) -> list[str]:
    """Every command a campaign can run, rendered with the built-ins in `base`: what its policy must
    allow for a headless run never to stop at a command gate."""
    from agent.campaign import load_campaign, render

    campaign = load_campaign(campaign_yaml).campaign
    names = {**base, **{k: render(v, base) for k, v in campaign.vars.items()}}
    specs = [*campaign.baseline.setup, *campaign.baseline.health, campaign.benchmark, *campaign.stress]
    commands = [s.run for s in specs] + [s.check for s in campaign.stress if s.check]
    for option in campaign.options:
        commands += [c.run for c in [*option.apply, *option.revert, *option.probes]]
        commands += [option.check.run] if option.check else []
    return [render(c, names) for c in commands]


# ---------------------------------------------------------------- stopping what the campaign started


def _own_server(workdir: Path, pidfile: str, program: str) -> int | None:
    """The PID in the working directory's pidfile, if that process is `program` and runs there (a stale
    pidfile's PID may belong to anything by now)."""
    p = procs.from_pid_file(workdir / pidfile)
    if p is None or program not in p.cmdline:
        return None
    pid = p.pid
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None
    return pid if Path(cwd) == workdir.resolve() else None


def redis_pid(workdir: Path) -> int | None:
    """The redis-server of this working directory, by redisctl.sh's pidfile."""
    return _own_server(workdir, "redis.pid", "redis-server")


def postgres_pid(workdir: Path) -> int | None:
    """The postmaster of this working directory's cluster, by its postmaster.pid."""
    return procs.postmaster(workdir.resolve() / "pgdata")


def llama_pid(workdir: Path) -> int | None:
    """The llama-server of this working directory, by llamactl.sh's pidfile."""
    return _own_server(workdir, "llama.pid", "llama-server")


def server_pid(kind: str, workdir: Path) -> int | None:
    return {"redis": redis_pid, "postgres": postgres_pid, "llamacpp": llama_pid}[kind](workdir)


SCRIPTS = {"redis": "redisctl.sh", "postgres": "pgctl.sh", "llamacpp": "llamactl.sh"}


def stop_server(hosts: Hosts, session: str, host: str, kind: str) -> None:
    """The control script's own `stop` in the host's directory; then, if the server is still up (the
    script failed, the host is unreachable), its PID from the pidfile: SIGINT/SIGTERM, then SIGKILL."""
    script = SCRIPTS[kind]
    workdir = hosts.workdir(session, host)
    if not workdir.is_dir():
        return
    if server_pid(kind, workdir) is None:
        return
    with contextlib.suppress(Exception):  # the PID route below still ends it
        hosts.run(session, host, f"sh {script} stop", timeout=60)
    pid = server_pid(kind, workdir)
    if pid is None:
        return
    # PostgreSQL's fast shutdown is SIGINT; Redis saves and exits on SIGTERM, llama-server exits on it.
    os.kill(pid, signal.SIGINT if kind == "postgres" else signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and procs.alive(pid):
        time.sleep(0.05)
    procs.kill([pid])


# ---------------------------------------------------------------- a headless run, pauses answered


@dataclass
class Outcome:
    out: dict[str, Any]
    code: int
    seconds: float  # wall time of the run and every resume
    answers: list[tuple[str, str]] = field(default_factory=list)  # (gate kind, answer)
    stderr: str = ""

    def option(self, option_id: int) -> dict[str, Any]:
        return next(o for o in self.out["options"] if o["id"] == option_id)


# A person at the gates where the cautious policy asks because the real noise left an A/B inconclusive:
# skip it (and so roll it back) and go on with the next, and say so once for the rest of the session, so
# that the next such gate does not pause the run again. The standing answers are conditioned on exactly
# that situation; a gate of the same kind that pauses anyway gets the plain answer. An unverified
# rollback is never accepted: it is reverted and verified again once, as a person would when the other
# suites' disk load made the machine read 70% slow right after a revert (CI, Redis with fsync on every
# write); a second one fails the test.
ANSWERS = {
    "safety": ("always skip if inconclusive", "skip"),
    "continue_or_ask": ("always continue if there is a next step", "continue"),
    "rollback": ("revert and verify", "revert and verify"),
}


def run_headless(campaign: Path, policy: Path, home: Path, *, max_answers: int = 6, timeout: float = 150) -> Outcome:
    env = {**os.environ, "SIGNOFF_HOME": str(home), "USER": "tester", "COLUMNS": "200"}
    started = time.monotonic()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        left = max(timeout - (time.monotonic() - started), 10)
        return subprocess.run([*SIGNOFF, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=left)

    p = cli("run", str(campaign), "--policy", str(policy), "--headless", "--json")
    answers: list[tuple[str, str]] = []
    stderr = p.stderr
    while p.returncode == 3 and len(answers) < max_answers:
        out = json.loads(p.stdout)
        gate = out.get("pending_gate") or {}
        kind = gate.get("kind", "")
        if kind not in ANSWERS or (kind == "rollback" and any(k == kind for k, _ in answers)):
            break
        standing, plain = ANSWERS[kind]
        answer = plain if any(k == kind for k, _ in answers) else standing
        answers.append((kind, answer))
        p = cli("decide", out["session"], answer, "--yes", "--json")
        stderr += p.stderr
    try:
        out = json.loads(p.stdout)
    except json.JSONDecodeError:
        out = {"status": "no-json", "error": p.stderr[-2000:], "options": []}
    return Outcome(out=out, code=p.returncode, seconds=time.monotonic() - started, answers=answers, stderr=stderr)
