"""Named places where the crash tests kill signoff with SIGKILL, chosen by one environment variable.

`SIGNOFF_CRASH_AT="<point>[#n]"` kills this process the n-th time (default 1st) it reaches `<point>`:

- `journal:<kind>` or `journal:<kind>/<purpose>` — right after that journal line is on disk;
- `torn:<kind>` — halfway through writing that journal line (the next start repairs it);
- `intent:<kind>` — a steering line announced in the head, not yet written (agent/journal/chain.py);
- `unheaded:<kind>` — a durable journal line on disk, the head that covers it not yet written;
- `head:copies` — a head written to the head file, not yet to the checkpoint DB;
- `ran:<purpose>` — a command finished on its host but signoff has not recorded it yet;
- `checkpoint` — right after a graph step's checkpoint is committed.

Unset (always, outside tests) every call is one dictionary lookup. Standard library only: the journal
imports it, and `signoff sessions` must stay light.
"""

from __future__ import annotations

import os
import signal
import threading

_SPEC = os.environ.get("SIGNOFF_CRASH_AT", "")
_point, _, _nth = _SPEC.partition("#")
_target = int(_nth) if _nth.isdigit() else 1
_seen = 0
_lock = threading.Lock()


def armed(point: str) -> bool:
    """True when reaching `point` now is the crash asked for (counts every time it is reached)."""
    global _seen
    if not _point or point != _point:
        return False
    with _lock:
        _seen += 1
        return _seen == _target


def kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def reached(*points: str) -> None:
    """Die here if one of these names is the armed point (several names: `kind` and `kind/purpose`)."""
    if _point and any(armed(p) for p in points):
        kill()
