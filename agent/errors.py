"""Every error signoff raises on purpose, under one base, and the one table that turns errors into exit codes.

A `SignoffError`'s message is one line that says what went wrong and what to do; the CLI prints it as
`signoff: <message>` and exits with `exit_code(exc)`. `tools/` and `policies/` cannot import this module
(they know nothing of agent/), so their few errors are named in the same table by class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from tools.commands import Verdict
    from tools.transport import CommandResult

# Exit codes: the CLI contract scripts and CI depend on.
FINISHED = 0
FAILED = 1  # the run failed, or a check (verify, a replay diff) failed
BAD_INPUT = 2  # nothing was done: a file, an argument or a session that cannot be used as asked
PAUSED = 3  # the session waits at a gate for a person
FAIL_ON_MATCHED = 4  # --fail-on (or --fail-on-diff) found what it was told to fail on
UNVERIFIED = 5  # the journal (or an answer waiting in the store) failed verification when opened to go on
INTERRUPTED = 130  # Ctrl-C


class SignoffError(Exception):
    """Something signoff cannot do as asked; the message is one line that says why."""

    exit_code: ClassVar[int] = BAD_INPUT


class SessionError(SignoffError, RuntimeError):
    """A session cannot do what was asked (missing, busy, not waiting); the message says why."""


class SessionBusy(SessionError):
    """Another process holds the session's lease (it is running the session)."""

    def __init__(self, message: str, *, holder: str | None = None) -> None:
        super().__init__(message)
        self.holder = holder  # who holds the lease, as its lock says ("pid 4242 (alice)"), when that is the reason


class GateNotWaiting(SessionError):
    """An answer given for a gate the session no longer waits at (decided elsewhere, or moved on): refused,
    and the message says who decided that gate and how."""


class DocumentsChanged(SessionError):
    """The session's own campaign.yaml or policy.yaml is not what its journal recorded: nothing runs."""

    def __init__(self, session: str, problem: str) -> None:
        self.problem = problem
        super().__init__(
            f"session {session}: {problem}; nothing ran (restore the file, or start a new session from it)"
        )


class JournalUnverified(SignoffError, RuntimeError):
    """A session's journal failed verification when a command opened it to go on (resume, decide, attach,
    a team store's runner): nothing was run, appended or signed; or to report on it (`signoff report`):
    no report was made from it (`undone` says which). Not a SessionError: no caller may take it for a busy
    or missing session."""

    exit_code: ClassVar[int] = UNVERIFIED

    def __init__(self, session: str, problem: str, *, undone: str = "nothing ran and nothing was signed") -> None:
        self.session, self.problem = session, problem
        super().__init__(
            f"session {session}: {problem}; {undone} (`signoff replay {session} --verify` checks its journal)"
        )


class AnswerUnrecorded(SignoffError, RuntimeError):
    """An answer waiting in the session's answer store is not a decision its (verified) journal records: written or
    changed outside signoff. Nothing was applied, appended or signed; the gate still waits."""

    exit_code: ClassVar[int] = UNVERIFIED

    def __init__(self, session: str, gate: str, what: str) -> None:
        self.session, self.gate = session, gate
        super().__init__(
            f"session {session}: the answer waiting for gate {gate} {what}, so it was changed outside signoff; "
            f"nothing was applied (answer the gate again with `signoff decide {session} --gate {gate} …`)"
        )


class CheckpointUnreadable(SignoffError, RuntimeError):
    """The session's checkpoint store cannot be read, so the graph cannot resume."""


class RunFailed(SignoffError, RuntimeError):
    """The graph raised: journaled as session.failed; the checkpoint stays for `signoff resume`."""

    exit_code: ClassVar[int] = FAILED


class CommandRefused(SignoffError, RuntimeError):
    """The command policy does not let this command run (deny, or ask without approval)."""

    exit_code: ClassVar[int] = FAILED

    def __init__(self, command: str, verdict: Verdict) -> None:
        self.command, self.verdict = command, verdict
        super().__init__(f"command {verdict.klass}: {verdict.part!r} {verdict.reason}")


class LinkLost(SignoffError, RuntimeError):
    """The link to the host dropped mid-command; a read-only command may simply run again."""

    exit_code: ClassVar[int] = FAILED

    def __init__(self, result: CommandResult) -> None:
        self.result = result
        super().__init__(result.error)


class MutationInDoubt(SignoffError, RuntimeError):
    """A mutation was cut short by a crash and nothing can tell whether it took effect."""

    exit_code: ClassVar[int] = FAILED

    def __init__(self, key: str, host: str, effect: str, option: int | None, why: str) -> None:
        self.key, self.host, self.effect, self.option = key, host, effect, option
        super().__init__(
            f"the {effect} of #{option} on {host} was cut short by a crash and {why}, so whether it took effect "
            "is unknown"
        )


class ConfigurationMismatch(SignoffError, RuntimeError):
    """The hosts are not in the configuration an A/B arm needs: a toggle failed, or an option's check disagrees."""

    exit_code: ClassVar[int] = FAILED


class LLMError(SignoffError, RuntimeError):
    """A model call that failed for good (after retries) or that cannot be made (no key)."""

    exit_code: ClassVar[int] = FAILED


class BrainUnavailable(SignoffError, RuntimeError):
    """The Claude brain cannot be used for this session: the check before it was made said why."""

    exit_code: ClassVar[int] = FAILED


class BrainRefused(BrainUnavailable):
    """The API refused the credentials or does not serve the model as asked: the setup must change (nothing ran)."""

    exit_code: ClassVar[int] = BAD_INPUT


class BrainUnreachable(BrainUnavailable):
    """The API did not answer usefully (no connection, a timeout, a 5xx): try again later (nothing ran)."""


class StepFailed(SignoffError, RuntimeError):
    """The model's output for one step was unusable after the repair round."""

    exit_code: ClassVar[int] = FAILED


# The errors of tools/ and policies/ by module and class name (they cannot subclass SignoffError), and
# what each means for the exit code. Anything else that escapes is a bug, and shows its traceback.
FOREIGN: dict[tuple[str, str], int] = {
    ("policies.yamlsrc", "SourceError"): BAD_INPUT,
    ("policies.expr", "ExprError"): BAD_INPUT,
    ("policies.refusals", "DecisionError"): BAD_INPUT,
    ("policies.refusals", "NotUnderstood"): BAD_INPUT,
    ("tools.secrets", "UndeliverableSecret"): BAD_INPUT,
    ("tools.ssh", "HostKeyError"): BAD_INPUT,
    ("tools.transport", "TransportError"): FAILED,
    ("tools.artifacts", "StorageFull"): FAILED,
    ("tools.benchparse.record", "BenchParseError"): FAILED,
}


def exit_code(exc: BaseException) -> int | None:
    """The exit code for an error signoff raises on purpose; None for anything else (a bug)."""
    if isinstance(exc, SignoffError):
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return INTERRUPTED
    for cls in type(exc).__mro__:
        code = FOREIGN.get((cls.__module__, cls.__qualname__))
        if code is not None:
            return code
    return None
