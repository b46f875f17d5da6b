"""How commands reach a host: the `Transport` protocol and the local (subprocess) implementation.

Every command has a deadline. On expiry the whole process group is killed, because a wedged
server or benchmark client never returns by itself (vLLM and SGLang clients wait for hours).
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

TAIL_CHARS = 4000


class Host(BaseModel):
    """A machine commands run on. `transport` chooses how they get there."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    transport: Literal["local", "ssh"] = "local"
    address: str | None = None
    port: int = 22
    user: str | None = None
    key_path: str | None = None
    known_hosts: str | None = None
    roles: list[str] = Field(default_factory=list)
    workdir: str | None = None


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
    stdout_digest: str = ""
    artifact: str | None = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


LineCallback = Callable[[str, str], None]


class Transport(Protocol):
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
    ) -> CommandResult: ...

    def workdir(self, host: Host) -> str: ...

    def close(self) -> None: ...


class ArtifactStore:
    """Content-addressed files for full command output (the journal keeps only digests)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def put(self, data: bytes) -> tuple[str, str]:
        digest = hashlib.sha256(data).hexdigest()
        path = self.root / f"sha256-{digest}"
        if not path.exists():
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(data)
            tmp.replace(path)
        return digest, path.name


class LocalTransport:
    """Runs commands with `bash -c` in a per-host working directory on this machine."""

    def __init__(self, hosts_root: Path, artifacts: ArtifactStore) -> None:
        self.hosts_root = hosts_root
        self.artifacts = artifacts

    def workdir(self, host: Host) -> str:
        path = Path(host.workdir) if host.workdir else self.hosts_root / host.name
        path.mkdir(parents=True, exist_ok=True)
        return str(path)

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
    ) -> CommandResult:
        if timeout <= 0:
            raise ValueError("every command needs a positive timeout")
        full_env = {**os.environ, **(env or {}), "SIGNOFF_HOST": host.name}
        started = time.monotonic()
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=cwd or self.workdir(host),
            env=full_env,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # own process group, so a timeout kills children too
        )
        out: list[bytes] = []
        err: list[bytes] = []
        readers = [
            threading.Thread(target=_pump, args=(proc.stdout, out, "stdout", on_line), daemon=True),
            threading.Thread(target=_pump, args=(proc.stderr, err, "stderr", on_line), daemon=True),
        ]
        for t in readers:
            t.start()
        if stdin is not None and proc.stdin:
            proc.stdin.write(stdin)
            proc.stdin.close()
        timed_out = killed = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            killed = _kill_group(proc)
        for t in readers:
            t.join(timeout=5)
        duration = time.monotonic() - started
        stdout_b, stderr_b = b"".join(out), b"".join(err)
        _digest, name = self.artifacts.put(
            b"$ " + command.encode() + b"\n--- stdout\n" + stdout_b + b"\n--- stderr\n" + stderr_b
        )
        return CommandResult(
            host=host.name,
            command=command,
            exit_code=None if timed_out else proc.returncode,
            timed_out=timed_out,
            killed=killed,
            duration_s=round(duration, 4),
            stdout_tail=stdout_b.decode(errors="replace")[-TAIL_CHARS:],
            stderr_tail=stderr_b.decode(errors="replace")[-TAIL_CHARS:],
            stdout_digest=hashlib.sha256(stdout_b).hexdigest(),
            artifact=name,
        )

    def close(self) -> None:
        return None


def _pump(stream, sink: list[bytes], name: str, on_line: LineCallback | None) -> None:
    for raw in iter(stream.readline, b""):
        sink.append(raw)
        if on_line is not None:
            on_line(name, raw.decode(errors="replace").rstrip("\n"))
    stream.close()


def _kill_group(proc: subprocess.Popen[bytes]) -> bool:
    """TERM the group, give it a moment, then KILL; True when the process is gone."""
    for sig, grace in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return True
        try:
            proc.wait(timeout=grace)
            return True
        except subprocess.TimeoutExpired:
            continue
    return False
