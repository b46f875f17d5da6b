"""Every error signoff raises on purpose, under one base, and the one table that turns them into exit codes."""

from __future__ import annotations


class SignoffError(Exception):
    """Something signoff cannot do as asked; the message is one line that says why and what to do."""


class SessionError(SignoffError, RuntimeError):
    """A session cannot do what was asked (missing, busy, not waiting); the message says why."""
