"""A stop asked for by a signal, honoured at the next graph step boundary (so the last checkpoint is a
whole step and `signoff resume` continues cleanly). Tiny on purpose: the CLI imports it at start-up."""

from __future__ import annotations

import threading

_requested = threading.Event()


def request_stop() -> bool:
    """Ask the running graph to stop after its current step; True if a stop was already asked for."""
    already = _requested.is_set()
    _requested.set()
    return already


def stop_requested() -> bool:
    return _requested.is_set()
