"""`MockTransport`: the in-memory stand-in for the `Transport` seam (as httpx ships `MockTransport` beside
its real transports), for fast tests of everything above it — the graph, its nodes, the runner.

Nothing runs and no process starts: every command goes to a *handler* you write, usually a tiny simulated
server (a dict of what is switched on, a match on the command's words). It gets the `CommandRequest` the seam
was given (`request.host` is the `Host`, `request.cwd` where the command would run). The handler answers with a whole
`CommandResult`, or just the stdout text (exit 0), or just an exit code, and every request is recorded, in
order, in `.requests`, so a test asserts on what the orchestrator asked of the hosts as well as on what it
concluded from the answers.

Deadlines are the handler's to simulate: a result with `timed_out` (`CommandRequest.hang()` makes one) is
passed through as the real transports report an overrun, and the caller's `on_timeout` hook runs first, as
it does before their kill — so a stress scenario's diagnosis runs too. A handler may be called from several
threads at once (a command on many hosts runs in parallel) and must guard its own state.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from tools.artifacts import ArtifactStore
from tools.output import LineCallback
from tools.transport import CommandRequest, CommandResult, Host, KeywordRun, finish, open_sinks

__all__ = ["CommandRequest", "Handler", "MockTransport"]


Handler = Callable[[CommandRequest], CommandResult | str | int]


class MockTransport(KeywordRun):
    """A `Transport` whose hosts are `handler`: see the module docstring."""

    def __init__(
        self,
        handler: Handler,
        *,
        artifacts: ArtifactStore | None = None,
        redact: Callable[[str], str] = str,
        root: str = "/mock",
    ) -> None:
        self.handler = handler
        # When given, output goes through the real transports' sinks: redacted, kept as artifacts, digested.
        self.artifacts = artifacts
        self.redact = redact
        self.root = root
        self.requests: list[CommandRequest] = []
        self.uploads: list[tuple[str, Path, str]] = []  # (host, local file, remote path)
        self.closed = False
        self._lock = threading.Lock()

    def execute(self, request: CommandRequest) -> CommandResult:
        # The handler sees where the command runs, as the host would.
        request = request.model_copy(update={"cwd": request.cwd or self.workdir(request.host)})
        with self._lock:
            self.requests.append(request)
        result = self._as_result(request, self.handler(request))  # outside the lock: a hook may run more
        if result.timed_out and request.on_timeout is not None:
            request.on_timeout()
        return self._output(result, request.on_line)

    def sent(self, containing: str = "", *, host: str | None = None) -> list[CommandRequest]:
        """The requests so far whose command contains `containing` (on `host`, when given), in order."""
        with self._lock:
            return [r for r in self.requests if containing in r.command and host in (None, r.host.name)]

    def workdir(self, host: Host) -> str:
        return host.workdir or f"{self.root}/{host.name}"

    def put(self, host: Host, local: Path, remote: str) -> None:
        if not local.is_file():
            raise FileNotFoundError(local)
        with self._lock:
            self.uploads.append((host.name, local, remote))

    def close(self) -> None:
        self.closed = True

    @staticmethod
    def _as_result(request: CommandRequest, answer: object) -> CommandResult:
        # `object`: a handler is typed to return a CommandResult, stdout or an exit code, but this checks what it did
        if isinstance(answer, CommandResult):
            return answer
        if isinstance(answer, str):
            return request.result(answer)
        if isinstance(answer, int) and not isinstance(answer, bool):
            return request.result(exit_code=answer)
        raise TypeError(f"a MockTransport handler returns a CommandResult, stdout or an exit code, not {answer!r}")

    def _output(self, result: CommandResult, on_line: LineCallback | None) -> CommandResult:
        """The result as a real transport returns it: output streamed line by line to `on_line` and, with an
        artifact store, redacted, digested and kept there (through the same sinks LocalTransport uses)."""
        if self.artifacts is None or result.artifact is not None:
            if on_line is not None:
                for stream, text in (("stdout", result.stdout_tail), ("stderr", result.stderr_tail)):
                    for line in text.splitlines():
                        on_line(stream, line)
            return result
        out, err = open_sinks(self.artifacts, on_line, self.redact)
        out.feed(result.stdout_tail.encode())
        err.feed(result.stderr_tail.encode())
        kept = finish(
            result.host,
            self.redact(result.command),
            out,
            err,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            killed=result.killed,
            duration=result.duration_s,
            error=result.error,
            link_lost=result.link_lost,
        )
        return kept.model_copy(update={"diagnosis": result.diagnosis}) if result.diagnosis else kept
