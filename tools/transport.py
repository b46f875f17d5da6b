"""How commands reach a host: the `Transport` protocol and the local (subprocess) implementation.

Every command has a deadline. On expiry the whole process group is killed, because a wedged
server or benchmark client never returns by itself (vLLM and SGLang clients wait for hours).
"""

from __future__ import annotations

import io
import math
import os
import select
import shutil
import signal
import subprocess
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tools.artifacts import ArtifactStore, StorageFull
from tools.output import LineCallback, StreamSink

TAIL_CHARS = 4000
# How a host's commands get there: each name has a transport in agent/run/connect.py: TRANSPORTS.
TransportName = Literal["local", "ssh"]


class Host(BaseModel):
    """A machine commands run on. `transport` chooses how they get there."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """The host's name in commands (`on:`) and reports; for SSH also the ssh_config alias when `address` is
    not given."""
    transport: TransportName = "local"
    """`local` runs on this machine; `ssh` over SSH (paramiko), the host resolved as `ssh -G` would (ssh_config
    aliases, user, port, keys, ProxyJump)."""
    address: str | None = None
    """The SSH address or ssh_config alias (default: `name`)."""
    port: int = Field(default=22, ge=1, le=65535)
    """The SSH port (ssh_config's when left at 22)."""
    user: str | None = None
    """The SSH user (default: ssh_config's)."""
    key_path: str | None = None
    """A private key file (default: ssh_config's IdentityFile entries that exist)."""
    known_hosts: str | None = None
    """An extra known_hosts file, relative to the campaign's directory, beside the user's own."""
    roles: list[str] = Field(default_factory=list)
    """Roles commands can target with `on:` (e.g. decode, postgres)."""
    workdir: str | None = None
    """The working directory commands run in (default: signoff/SESSION/HOST under the SSH user's home, or one per
    session on this machine)."""
    use_agent: bool = False
    """Use ssh-agent; only when asked, since the agent tries every key it holds."""
    passphrase_env: str | None = None
    """The environment variable holding the key's passphrase."""
    proxy_jump: str | None = None
    """[user@]host[:port] to jump through, as OpenSSH's ProxyJump (default: ssh_config's)."""
    inherit_env: list[str] = Field(default_factory=list)
    """Local hosts: environment variables their commands inherit beyond a login shell's (names, or PREFIX*)."""

    @field_validator("address", "user", "proxy_jump")
    @classmethod
    def _not_an_option(cls, value: str | None) -> str | None:
        # These reach `ssh -G` and the SSH handshake: a value that reads as an option (`-F./evil_config`, whose
        # `Match exec` would run at resolution) or holds spaces or control characters is not a host.
        if value is not None and (value.startswith("-") or any(c.isspace() or ord(c) < 32 for c in value) or not value):
            raise ValueError(
                f"{value!r} is not a host, user or jump host (no leading '-', spaces or control characters)"
            )
        return value


# What a local host's commands inherit from signoff's environment unless the host names more: what a
# login shell would set. Anything else (a DATABASE_URL with its password, SIGNOFF_SIGNING_KEY's path,
# cloud credentials) stays behind, as it does for a command that runs over SSH.
LOCAL_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "TMPDIR")


def local_environment(host: Host, environ: Mapping[str, str]) -> dict[str, str]:
    """The part of `environ` a local host's commands see: LOCAL_ENV and the host's own `inherit_env`, with PATH
    cut to its absolute entries (see SHELL)."""
    names = [*LOCAL_ENV, *host.inherit_env]
    exact = {n for n in names if not n.endswith("*")}
    prefixes = tuple(n[:-1] for n in names if n.endswith("*"))
    kept = {k: v for k, v in environ.items() if k in exact or (prefixes and k.startswith(prefixes))}
    # Never empty or absent: bash then searches the working directory (its built-in default ends in `.`).
    kept["PATH"] = ":".join(d for d in kept.get("PATH", "").split(":") if d.startswith("/")) or DEFAULT_PATH
    return kept


# The one interpreter every command runs with, on every transport: the command policy reads commands as bash
# (tools/commands/) and the text it allowed is bash's to run (tools/canonical/), never `sh` (dash on Debian reads
# `$'…'` and more differently). Started without profiles or rc files, and privileged (`-p`): no functions imported
# from the environment (an exported `BASH_FUNC_cat%%` would otherwise replace `cat`), no BASH_ENV, ENV, SHELLOPTS,
# BASHOPTS, CDPATH or GLOBIGNORE taken from it. The host's bash is asked for by name, so a host without one fails at
# once (`bash: not found`), never falls back to another shell.
SHELL = ("bash", "--noprofile", "--norc", "-p", "-c")
# A bare program name in an allow pattern means that name found on the host's PATH: a relative entry there (`.`,
# an empty one, `bin`) would find it in whatever directory the command is in. Run first, inside that bash, on hosts
# whose environment signoff does not build itself (SSH). Builtins only: no subshell to fork on every command. The
# loop runs only when PATH has an entry to drop: in `:$PATH:`, a `:` followed by anything but `/` starts a relative
# entry or an empty one (and an empty or unset PATH is `::`). That one `case` costs ~10 µs, the loop ~25 µs an entry,
# and most hosts' PATH is all absolute already (tests/security/test_absolute_path.py holds it to the rule).
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
ABSOLUTE_PATH = (
    "case :$PATH: in *:[!/]*) "
    '__r=$PATH:; __p=; while [ -n "$__r" ]; do __d=${__r%%:*}; __r=${__r#*:}; '
    "case $__d in /*) __p=${__p:+$__p:}$__d;; esac; done; "
    f"PATH=${{__p:-{DEFAULT_PATH}}};; esac; unset __r __p __d; "
)


class CommandResult(BaseModel):
    """What one command did. Full output lives in an artifact file named by its digest."""

    host: str
    command: str
    exit_code: int | None
    timed_out: bool = False
    killed: bool = False
    duration_s: float
    stdout_tail: str = ""
    stderr_tail: str = ""
    stdout_truncated: bool = False  # stdout_tail holds the last 1 MiB; the artifact has all of it
    stdout_digest: str = ""
    artifact: str | None = None  # full stdout
    stderr_artifact: str | None = None
    error: str | None = None  # the transport could not run it (unreachable, auth, host key, link lost)
    link_lost: bool = False  # the link dropped while it ran: whether it finished on the host is unknown
    diagnosis: str | None = None  # artifact of what an on_timeout hook captured before the kill
    # Timed out: seconds from its last line of output to the deadline (its whole run when it printed nothing).
    quiet_s: float | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and self.error is None


# Every command runs under a backstop that holds if signoff itself dies (SIGKILL, OOM, a dropped link): our own
# timer dies with us, and an orphan must not run forever. Locally it is coreutils `timeout`; over SSH a watchdog the
# command's bash forks (tools/ssh/script.py: watchdog), which may fire up to a second early. It fires OUTLIVE_S after
# our own deadline (later still when a diagnosis runs first) and kills OUTLIVE_KILL_S after that, so a command is gone
# at the latest `gone_after(timeout)` seconds after it started.
OUTLIVE_S = 3
OUTLIVE_KILL_S = 2
DIAGNOSE_GRACE_S = 60  # a hung command stays up while its on_timeout diagnosis (e.g. py-spy) looks at it


def backstop(timeout: float, *, diagnosed: bool = False) -> tuple[int, int]:
    """(seconds until the backstop's TERM, seconds from TERM to KILL)."""
    return math.ceil(timeout) + OUTLIVE_S + (DIAGNOSE_GRACE_S if diagnosed else 0), OUTLIVE_KILL_S


def gone_after(timeout: float) -> float:
    """Seconds after its start by which a command without a diagnosis has ended, even if signoff died."""
    term, kill = backstop(timeout)
    return term + kill + 1.0


def open_sinks(
    store: ArtifactStore, on_line: LineCallback | None, redact: Callable[[str], str]
) -> tuple[StreamSink, StreamSink]:
    # No file is made before a stream's first byte, so a full disk shows at that write (or at close), never here.
    return StreamSink("stdout", store, on_line, redact), StreamSink("stderr", store, on_line, redact)


class TransportError(RuntimeError):
    """A command could not be run on its host; the message says why in one line."""


class CommandRequest(BaseModel):
    """One command for one host: the seam's one argument (`Transport.execute`), and what `MockTransport` records."""

    model_config = ConfigDict(frozen=True)

    host: Host
    command: str
    """The script as it will run (a secret is read from stdin first, never on this line)."""
    timeout: float = Field(gt=0)
    """Seconds; every command has one. On expiry `on_timeout` runs, then the command's process group is killed."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables set for the command, beyond the host's environment."""
    cwd: str | None = None
    """Where it runs (default: the transport's working directory for the host)."""
    stdin: bytes | None = None
    """What the command reads (its secrets); without it the command reads /dev/null."""
    reads_only: bool = False
    """Said by the caller: the command only looks (a probe, a health check, a benchmark run), so running it twice
    does no harm (agent/exec/execute.py retries such a command once when the link drops under it)."""
    on_line: LineCallback | None = Field(default=None, exclude=True, repr=False)
    """Each line of output as it arrives, (stream name, line), redacted."""
    on_timeout: Callable[[], None] | None = Field(default=None, exclude=True, repr=False)
    """Runs at the deadline, before the kill, while the command is still up (e.g. a py-spy dump)."""

    def result(
        self, stdout: str = "", *, exit_code: int = 0, stderr: str = "", duration_s: float = 0.0
    ) -> CommandResult:
        """The command ran to its end with this output."""
        return CommandResult(
            host=self.host.name,
            command=self.command,
            exit_code=exit_code,
            duration_s=duration_s,
            stdout_tail=stdout,
            stderr_tail=stderr,
        )

    def hang(self, stdout: str = "", *, killed: bool = True) -> CommandResult:
        """The command overran its deadline and was killed (`killed=False`: the kill did not take)."""
        return CommandResult(
            host=self.host.name,
            command=self.command,
            exit_code=None,
            timed_out=True,
            killed=killed,
            duration_s=self.timeout,
            stdout_tail=stdout,
        )


class Transport(Protocol):
    """How commands reach hosts: one request in, one result out (agent/run/connect.py: TRANSPORTS names them)."""

    def execute(self, request: CommandRequest) -> CommandResult: ...

    def workdir(self, host: Host) -> str: ...

    def put(self, host: Host, local: Path, remote: str) -> None: ...

    def close(self) -> None: ...


class KeywordRun(ABC):
    """`run`, the keyword form of `execute`, for every transport: written here once."""

    @abstractmethod
    def execute(self, request: CommandRequest) -> CommandResult: ...

    def run(
        self,
        host: Host,
        command: str,
        *,
        timeout: float,
        on_line: LineCallback | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: bytes | None = None,
        on_timeout: Callable[[], None] | None = None,
        reads_only: bool = False,
    ) -> CommandResult:
        request = CommandRequest(
            host=host,
            command=command,
            timeout=timeout,
            env=dict(env or {}),
            cwd=cwd,
            stdin=stdin,
            reads_only=reads_only,
            on_line=on_line,
            on_timeout=on_timeout,
        )
        return self.execute(request)


class LocalTransport(KeywordRun):
    """Runs commands with bash (`SHELL`) in a per-host working directory on this machine."""

    def __init__(self, hosts_root: Path, artifacts: ArtifactStore, redact: Callable[[str], str] = str) -> None:
        self.hosts_root = hosts_root
        self.artifacts = artifacts
        self.redact = redact

    def workdir(self, host: Host) -> str:
        if host.workdir:
            path = Path(host.workdir)
            path.mkdir(parents=True, exist_ok=True)
            return str(path)
        # Others may pass through to a host's directory but not list it: a server a command starts as
        # another user (PostgreSQL as `postgres` under root) must reach the files it is given there.
        path = self.hosts_root / host.name
        for d in (self.hosts_root, path):
            d.mkdir(mode=0o711, exist_ok=True, parents=d is self.hosts_root)
        return str(path)

    def execute(self, request: CommandRequest) -> CommandResult:
        host, timeout, stdin, on_timeout = request.host, request.timeout, request.stdin, request.on_timeout
        try:
            workdir = request.cwd or self.workdir(host)
        except OSError as exc:
            raise TransportError(f"{host.name}: cannot use working directory: {exc}") from None
        full_env = {**local_environment(host, os.environ), **request.env, "SIGNOFF_HOST": host.name}
        # The sinks first: when the disk is full, nothing has started yet.
        out, err = open_sinks(self.artifacts, request.on_line, self.redact)
        term, kill = backstop(timeout, diagnosed=on_timeout is not None)
        guard = ["timeout", "-k", str(kill), str(term)] if shutil.which("timeout") else []
        if shutil.which("bash", path=full_env.get("PATH")) is None:
            raise TransportError(f"{host.name}: bash is not on PATH there; signoff runs every command with bash")
        started = time.monotonic()
        proc = subprocess.Popen(
            [*guard, *SHELL, request.command],
            cwd=workdir,
            env=full_env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # own process group, so a timeout kills children too
        )
        readers = [
            threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True),
            threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True),
        ]
        for t in readers:
            t.start()
        if stdin is not None and proc.stdin:
            try:
                proc.stdin.write(stdin)
                proc.stdin.close()
            except BrokenPipeError:
                pass
        timed_out = killed = False
        if not wait_for_exit(proc, timeout):
            timed_out = True
            if on_timeout is not None:
                on_timeout()
            killed = _kill_group(proc)
        for t in readers:
            t.join(timeout=5)
        return finish(
            host.name,
            self.redact(request.command),
            out,
            err,
            exit_code=None if timed_out else proc.returncode,
            timed_out=timed_out,
            killed=killed,
            duration=time.monotonic() - started,
        )

    def put(self, host: Host, local: Path, remote: str) -> None:
        target = Path(remote) if Path(remote).is_absolute() else Path(self.workdir(host)) / remote
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(local, target)

    def close(self) -> None:
        return None


def finish(
    host: str,
    command: str,
    out: StreamSink,
    err: StreamSink,
    *,
    exit_code: int | None,
    timed_out: bool,
    killed: bool,
    duration: float,
    error: str | None = None,
    link_lost: bool = False,
) -> CommandResult:
    full: StorageFull | None = None
    out_kept: tuple[str, str, str] | None = None
    err_kept: tuple[str, str, str] | None = None
    try:
        out_kept = out.close()
    except StorageFull as exc:  # both streams are closed and discarded: no partial artifact is left
        full = exc
    try:
        err_kept = err.close()
    except StorageFull as exc:
        full = full or exc
    ended = CommandResult(
        host=host,
        command=command,
        exit_code=exit_code,
        timed_out=timed_out,
        killed=killed,
        duration_s=round(duration, 4),
    )
    if full is not None:
        # The command ran and how it ended is known; only its output could not be kept.
        full.result = ended.model_copy(update={"error": f"output not kept: {full.strerror}"})
        raise full
    assert out_kept is not None and err_kept is not None  # a close() that did not return raised StorageFull
    stdout, digest, artifact = out_kept
    stderr, _, stderr_artifact = err_kept
    return ended.model_copy(
        update=dict(
            stdout_tail=stdout,
            stderr_tail=stderr[-TAIL_CHARS:],
            stdout_truncated=out.truncated,
            stdout_digest=digest,
            artifact=artifact,
            stderr_artifact=stderr_artifact,
            error=error,
            link_lost=link_lost,
        )
    )


def _pump(stream: io.BufferedReader, sink: StreamSink) -> None:
    # Popen's pipes with the default buffering: a BufferedReader, whose read1 returns what one read(2) gave
    for chunk in iter(lambda: stream.read1(65536), b""):
        sink.feed(chunk)
    stream.close()


def wait_for_exit(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait up to `timeout` seconds for `proc` to end; True (and reaped) when it did.

    `Popen.wait(timeout=…)` polls with sleeps that grow to 50 ms, so a command is noticed up to 50 ms after
    it ended; over the thousands of short commands of a run that is most of the local transport's cost.
    A pidfd becomes readable the moment the process ends. Where there is none (not Linux, a kernel before
    5.3), the poll it is."""
    if proc.returncode is not None:
        return True  # reaped already: its pid may be another process's by now
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        poller = select.poll()  # not select(): it cannot watch a descriptor numbered past 1023
        poller.register(fd, select.POLLIN)
        deadline = time.monotonic() + timeout
        ready: list[tuple[int, int]] = []
        while not ready and (left := deadline - time.monotonic()) > 0:
            ready = poller.poll(math.ceil(min(left, 86_400) * 1000))  # poll() takes an int of milliseconds
    finally:
        os.close(fd)
    if not ready:
        return False
    proc.wait()
    return True


def _kill_group(proc: subprocess.Popen[bytes]) -> bool:
    """TERM the group, give it a moment, then KILL; True when the process is gone."""
    for sig, grace in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return True
        if wait_for_exit(proc, grace):
            return True
    return False
