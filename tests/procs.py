"""Processes a test started, found and ended by PID: never by name, pattern or a user another test shares.

Read straight from /proc, so no `pgrep`/`pkill` is needed anywhere (tests/unit/test_hygiene.py checks that).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    uid: int
    cmdline: str


def _read(pid: int) -> Proc | None:
    base = PROC / str(pid)
    try:
        stat = (base / "stat").read_text()
        status = (base / "status").read_text()
        raw = (base / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name in `stat` is parenthesised and may contain spaces or parentheses itself.
    fields = stat[stat.rfind(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie is already gone; it only waits for its parent to reap it
        return None
    uid = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("Uid:")), -1)
    return Proc(
        pid=pid, ppid=int(fields[1]), uid=uid, cmdline=raw.replace(b"\0", b" ").decode(errors="replace").strip()
    )


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not: it only waits to be reaped)."""
    return _read(pid) is not None


def from_pid_file(path: Path) -> Proc | None:
    """The live process a pid file names (its first word); None when there is no such file, number or process. A
    stale file's pid may be anyone's by now: a caller checks the command line before it signals anything."""
    try:
        first = path.read_text().split()[0]
    except (OSError, IndexError):
        return None
    return _read(int(first)) if first.isdigit() else None


def postmaster(data: Path) -> int | None:
    """The postmaster of the cluster in `data`, by its postmaster.pid, if that process runs `-D <data>`."""
    p = from_pid_file(data / "postmaster.pid")
    return p.pid if p is not None and f" -D {data} " in f" {p.cmdline} " else None


def processes() -> list[Proc]:
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (p := _read(int(entry.name))) is not None:
            found.append(p)
    return found


def descendants(pid: int, among: list[Proc] | None = None) -> list[Proc]:
    """Every live process below `pid` (children, grandchildren, …), parents before children."""
    table = among if among is not None else processes()
    children: dict[int, list[Proc]] = {}
    for p in table:
        children.setdefault(p.ppid, []).append(p)
    out: list[Proc] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child.pid)
    return out


def owned_by(uid: int) -> list[Proc]:
    return [p for p in processes() if p.uid == uid]


def matching(pattern: str, among: list[Proc]) -> list[Proc]:
    rx = re.compile(pattern)
    return [p for p in among if rx.search(p.cmdline) and p.pid != os.getpid()]


def kill(pids: list[int], *, grace: float = 2.0) -> None:
    """TERM the given PIDs, then KILL whatever of them is still alive after `grace` seconds."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        live = [pid for pid in pids if alive(pid)]
        for pid in live:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(map(alive, live)):
            time.sleep(0.02)
