"""Why a one-liner is not taken: the errors of the one-line reader (`policies.decisions`, `policies.clauses`)."""

from __future__ import annotations


class DecisionError(ValueError):
    """The text is not a decision this gate can take; the message says what would be."""

    suggestion: str | None = None  # the closest reading the gate does take ("skip #2"), when there is one


class NotUnderstood(DecisionError):
    """The grammar could not read the text at all (as opposed to reading a decision it must refuse):
    the one case a language-model interpreter may be asked to try."""
