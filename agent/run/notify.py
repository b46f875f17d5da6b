"""Telling someone that a gate waits for a person: the `notify:` targets of the campaign and the policy.

When a run pauses at a gate a person must answer, the runner sends each target the gate as JSON
(`GateWaiting`): an HTTP(S) POST, or a local command reading it on stdin. `send` is the seam — one
`NotifyRequest` in, one `NotifyResult` out, never an exception, never longer than the target's
timeout — and `Recorder` its stand-in. Every attempt is journaled (`notify.sent`) with the target
redacted; a target that fails is only that: the run pauses exactly as it would without it.

Secrets: a URL or header value names them as `{{env:NAME}}` (or `env:NAME` as the whole value), resolved
here when the notification is sent, so the file (kept by the session, its journal and exports) never
holds one; the journal names a URL by scheme://host[:port] and a short path hint only, and every error
line is masked with the values resolved.
"""

from __future__ import annotations

import contextlib
import http.client
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from io import BufferedReader
from pathlib import Path
from typing import IO, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from policies.schema import ENV_REF, ENV_WHOLE, NotifyTarget, env_refs
from tools.secrets import Redactor
from tools.transport import Host, local_environment, wait_for_exit

MAX_OUTPUT = 64 * 1024  # read at most this much of a response body; keep at most this much of a command's stream
MAX_ERROR = 200  # characters of the one-line error journaled
KILL_GRACE_S = 1.0  # after a command's timeout: how long its killed process group may take to be reaped
_PATH_HINT = re.compile(r"^[A-Za-z][A-Za-z_.-]{0,19}$")  # a path segment shown as is: a word, not a token


# ---------------------------------------------------------------------------------------------- models


class AnswerWith(BaseModel):
    """The exact commands that answer the gate."""

    attach: str  # `signoff attach SESSION`: the TUI, at the gate
    decide: str  # `signoff decide SESSION --gate gN "<one line>"`: the suggested answer, for this gate only


class GateWaiting(BaseModel):
    """What a notification says: a POST's JSON body, or a command's stdin."""

    event: Literal["gate.waiting"] = "gate.waiting"
    text: str  # one line for a chat message (a Slack incoming webhook shows `text`)
    session: str
    campaign: str
    gate: str  # the gate's id
    kind: str  # plan, triage, safety, continue_or_ask, rollback, command, budget
    option: int | None = None
    question: str
    facts: dict[str, Any] = Field(default_factory=dict)
    allowed: list[str] = Field(default_factory=list)  # the answers the gate takes
    recommendation: dict[str, Any] | None = None  # what the policy would do, and why it asks instead
    deadline: dict[str, Any] | None = None  # {"at": ISO time, "on_deadline": the answer then}
    waiting_since: str  # ISO time the gate started waiting
    answer: AnswerWith


class Target(BaseModel):
    """A `notify:` entry ready to send: its secrets resolved (never journaled) and its redacted label."""

    label: str  # what the journal says: scheme://host[:port]/hint…, or the command
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    command: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)  # a command's whole environment
    cwd: str | None = None
    timeout_s: float = 5.0


class NotifyRequest(BaseModel):
    target: Target
    payload: GateWaiting


class NotifyResult(BaseModel):
    """How one attempt went; the fields of its `notify.sent` event."""

    target: str
    ok: bool
    status: int | None = None  # HTTP status
    exit: int | None = None  # a command's exit code
    error: str | None = None  # one line, when not ok
    duration_s: float = 0.0

    def event_fields(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


Sender = Callable[[NotifyRequest], NotifyResult]


# ---------------------------------------------------------------------------------------------- payload


def gate_waiting(*, session: str, campaign: str, gate: Mapping[str, Any], since: datetime) -> GateWaiting:
    """The payload for the gate a paused session waits at (`gate`: the outcome's `pending_gate`)."""
    one_line = str(gate.get("suggested") or "continue")
    # Bound to the gate it was sent for: read late, it is refused rather than taken by a gate that opened since.
    decide = f"signoff decide {session} --gate {gate.get('id')} {_quoted(one_line)}"
    option = gate.get("option")
    where = f"{gate.get('kind')}" + (f" #{option}" if option is not None else "")
    question = str(gate.get("question") or "")
    lines = [line.strip() for line in question.splitlines() if line.strip()]
    # the question itself: its last line that asks one (a long question lists the evidence first)
    asked = next((line for line in reversed(lines) if line.endswith("?")), lines[0] if lines else "")
    asked = asked if len(asked) <= 160 else asked[:159] + "…"
    return GateWaiting(
        text=f"signoff session {session} ({campaign}) waits at gate {gate.get('id')} ({where}): {asked} "
        f"— answer: {decide}",
        session=session,
        campaign=campaign,
        gate=str(gate.get("id")),
        kind=str(gate.get("kind")),
        option=option,
        question=question,
        facts=dict(gate.get("facts") or {}),
        allowed=[a for a in gate.get("allowed") or [] if a != "ask"],
        recommendation=gate.get("recommendation"),
        deadline=gate.get("deadline"),
        waiting_since=since.isoformat(timespec="seconds"),
        answer=AnswerWith(attach=f"signoff attach {session}", decide=decide),
    )


def _quoted(text: str) -> str:
    return f'"{text}"' if not re.search(r'["$`\\!\n]', text) else shlex.quote(text)


# ---------------------------------------------------------------------------------------------- targets


def _resolve(text: str, environ: Mapping[str, str], secrets: list[str]) -> str:
    def value(name: str) -> str:
        if not environ.get(name):
            raise ValueError(f"environment variable {name} is not set")
        secrets.append(environ[name])
        return environ[name]

    whole = ENV_WHOLE.match(text.strip())
    if whole:
        return value(whole.group(1))
    return ENV_REF.sub(lambda m: value(m.group(1)), text)


def url_label(url: str, *, path_of: str | None = None) -> str:
    """scheme://host[:port] and a hint of the path (its first segment when that is a plain word), never
    the query, the user part or a segment that could be a token. `path_of`: the URL as the file wrote it,
    whose path gives the hint (a segment that came from the environment is never shown)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    host = f"[{host}]" if ":" in host else host
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    segments = [s for s in urlsplit(path_of if path_of is not None else url).path.split("/") if s]
    hint = ""
    if segments:
        shown = _PATH_HINT.match(segments[0]) is not None
        hint = f"/{segments[0]}" + ("/…" if len(segments) > 1 else "") if shown else "/…"
    return f"{parts.scheme.lower()}://{host}{port}{hint}"


def _as_written(url: str) -> str:
    """The URL as the file writes it, each reference as `{NAME}` (no word: its segment is never shown)."""
    return "x://x/{URL}" if ENV_WHOLE.match(url.strip()) else ENV_REF.sub(lambda m: "{" + m.group(1) + "}", url)


def spec_label(spec: NotifyTarget) -> str:
    """A target's label from the file alone (a variable it needs may be missing): references by name."""
    if spec.url is not None:
        if ENV_WHOLE.match(spec.url.strip()) or "://" not in spec.url.split("{{", 1)[0]:
            return f"url from env {', '.join(env_refs(spec.url))}"
        return url_label(_as_written(spec.url))
    return command_label(spec.command or [])


def command_label(argv: list[str]) -> str:
    label = "command " + shlex.join(argv)
    return label if len(label) <= 80 else label[:79] + "…"


def target_for(
    spec: NotifyTarget, *, environ: Mapping[str, str], cwd: str | None, secrets: list[str], extra_env: Mapping[str, str]
) -> Target:
    """`spec` resolved against `environ` (the values it took are added to `secrets`). Raises ValueError when it
    cannot be sent as written: a variable it needs is not set, or what it names is no http(s) URL."""
    if spec.command is not None:
        env = {**local_environment(Host(name="notify", inherit_env=spec.inherit_env), environ), **extra_env}
        return Target(
            label=command_label(spec.command), command=list(spec.command), env=env, cwd=cwd, timeout_s=spec.timeout_s
        )
    assert spec.url is not None
    url = _resolve(spec.url, environ, secrets)
    if url != spec.url:
        secrets.append(url)  # a URL that holds a secret part is masked whole wherever it could surface
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError("the URL from the environment is not an http:// or https:// URL with a host")
    headers = {}
    for name, text in spec.headers.items():
        value = _resolve(text, environ, secrets)
        if any(c in value for c in "\r\n\0"):
            raise ValueError(f"header {name}: the value from the environment holds a line break")
        headers[name] = value
    label = url_label(url, path_of=_as_written(spec.url))
    return Target(label=label, url=url, headers=headers, timeout_s=spec.timeout_s)


# ---------------------------------------------------------------------------------------------- sending


def send(request: NotifyRequest) -> NotifyResult:
    """Send one notification; never raises, never blocks (much) longer than the target's timeout."""
    started = time.monotonic()
    target = request.target
    body = request.payload.model_dump_json().encode()
    try:
        result = _post(target, body) if target.url is not None else _run(target, body)
    except Exception as exc:  # a seam that must not break the run: whatever went wrong is its result
        result = NotifyResult(target=target.label, ok=False, error=f"{type(exc).__name__}: {exc}")
    return result.model_copy(update={"duration_s": round(time.monotonic() - started, 3)})


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # a 3xx is the answer, not a place to send the gate to


def _post(target: Target, body: bytes) -> NotifyResult:
    assert target.url is not None
    out: list[NotifyResult] = []

    def work() -> None:
        out.append(_post_now(target, body))

    worker = threading.Thread(target=work, name="notify-post", daemon=True)
    worker.start()
    worker.join(target.timeout_s)
    if out:
        return out[0]
    # Still connecting or reading: the socket's own timeout ends the thread; the run does not wait for it.
    return NotifyResult(target=target.label, ok=False, error=f"no answer within {target.timeout_s:g}s (timed out)")


def _post_now(target: Target, body: bytes) -> NotifyResult:
    assert target.url is not None
    headers = {**target.headers, "Content-Type": "application/json", "User-Agent": "signoff-notify"}
    request = urllib.request.Request(target.url, data=body, method="POST", headers=headers)
    opener = urllib.request.build_opener(_NoRedirect)
    label = target.label
    try:
        with opener.open(request, timeout=target.timeout_s) as response:
            response.read(MAX_OUTPUT)
            status = int(response.status)
        if 200 <= status < 300:
            return NotifyResult(target=label, ok=True, status=status)
        return NotifyResult(target=label, ok=False, status=status, error=f"HTTP {status}")
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            error = f"HTTP {exc.code}: redirect not followed"
            return NotifyResult(target=label, ok=False, status=exc.code, error=error)
        said = _first_line(exc.read(MAX_OUTPUT) if exc.fp is not None else b"")
        reason = said or str(exc.reason or "")
        return NotifyResult(target=label, ok=False, status=exc.code, error=f"HTTP {exc.code}: {reason}".rstrip(": "))
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            return NotifyResult(target=label, ok=False, error=f"no answer within {target.timeout_s:g}s (timed out)")
        text = getattr(reason, "strerror", None) or str(reason)
        return NotifyResult(target=label, ok=False, error=f"cannot connect: {text}")
    except TimeoutError:
        return NotifyResult(target=label, ok=False, error=f"no answer within {target.timeout_s:g}s (timed out)")
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return NotifyResult(target=label, ok=False, error=f"{type(exc).__name__}: {exc}")


def _program(name: str, env: Mapping[str, str], cwd: str | None) -> str | None:
    if "/" in name:
        path = Path(name) if Path(name).is_absolute() or cwd is None else Path(cwd) / name
        return str(path) if path.is_file() and os.access(path, os.X_OK) else None
    return shutil.which(name, path=env.get("PATH", os.defpath))


def _read_bounded(stream: BufferedReader, into: bytearray) -> None:
    """Drain `stream` (a chatty command must not block on a full pipe) keeping only its last MAX_OUTPUT bytes."""
    try:
        while chunk := stream.read1(MAX_OUTPUT):
            into += chunk
            if len(into) > MAX_OUTPUT:
                del into[: len(into) - MAX_OUTPUT]
    except (OSError, ValueError):
        pass
    finally:
        stream.close()


def _write_stdin(stream: IO[bytes], body: bytes) -> None:
    try:
        stream.write(body)
    except (OSError, ValueError):
        pass  # it does not read its stdin: its business
    finally:
        with contextlib.suppress(OSError):
            stream.close()


def _run(target: Target, body: bytes) -> NotifyResult:
    argv = target.command or []
    label = target.label
    program = _program(argv[0], target.env, target.cwd)
    if program is None:
        return NotifyResult(target=label, ok=False, error=f"command not found: {argv[0]}")
    # A backstop that holds if signoff itself dies while the command runs (as for every host command).
    guard = ["timeout", "-k", "1", str(math.ceil(target.timeout_s) + 2)] if shutil.which("timeout") else []
    try:
        proc = subprocess.Popen(
            [*guard, program, *argv[1:]],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=target.env,
            cwd=target.cwd,
            start_new_session=True,  # its own process group: a timeout kills what it started too
        )
    except OSError as exc:
        return NotifyResult(target=label, ok=False, error=f"cannot run {argv[0]}: {exc.strerror or exc}")
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    stdout, stderr = bytearray(), bytearray()
    threads = [
        threading.Thread(target=_write_stdin, args=(proc.stdin, body), daemon=True),
        threading.Thread(target=_read_bounded, args=(proc.stdout, stdout), daemon=True),
        threading.Thread(target=_read_bounded, args=(proc.stderr, stderr), daemon=True),
    ]
    for t in threads:
        t.start()
    try:
        if not wait_for_exit(proc, target.timeout_s):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # its own group, by the id it was started with
            wait_for_exit(proc, KILL_GRACE_S)
            error = f"still running after {target.timeout_s:g}s (timed out); its process group was killed"
            return NotifyResult(target=label, ok=False, error=error)
        code = proc.returncode
    finally:
        until = time.monotonic() + 0.3  # a grandchild that left the group may hold a pipe: not our wait
        for t in threads:
            t.join(timeout=max(0.0, until - time.monotonic()))
    if code == 0:
        return NotifyResult(target=label, ok=True, exit=0)
    said = _first_line(bytes(stderr), last=True) or _first_line(bytes(stdout), last=True)
    how = f"killed by signal {-code}" if code < 0 else f"exit {code}"
    return NotifyResult(target=label, ok=False, exit=code, error=f"{how}: {said}" if said else how)


def _first_line(data: bytes, *, last: bool = False) -> str:
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
    return (lines[-1] if last else lines[0]) if lines else ""


# ---------------------------------------------------------------------------------------------- firing


def fire(
    specs: Iterable[NotifyTarget],
    payload: GateWaiting,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | None = None,
    redact: Callable[[str], str] = str,
    sender: Sender = send,
) -> list[NotifyResult]:
    """Send `payload` to every target at once; their results in the targets' order, each error one
    redacted line. Returns within about the longest timeout; never raises."""
    environ = os.environ if environ is None else environ
    specs = list(specs)
    secrets: list[str] = []
    extra_env = {"SIGNOFF_SESSION": payload.session, "SIGNOFF_GATE": payload.gate}
    results: list[NotifyResult | None] = [None] * len(specs)
    labels = [spec_label(spec) for spec in specs]
    workers: list[tuple[int, threading.Thread, float]] = []
    for i, spec in enumerate(specs):
        try:
            target = target_for(spec, environ=environ, cwd=cwd, secrets=secrets, extra_env=extra_env)
        except Exception as exc:
            error = str(exc) if type(exc) is ValueError else f"{type(exc).__name__}: {exc}"
            results[i] = NotifyResult(target=labels[i], ok=False, error=error)
            continue
        labels[i] = target.label

        def work(i: int = i, target: Target = target) -> None:
            try:
                results[i] = sender(NotifyRequest(target=target, payload=payload))
            except Exception as exc:  # a sender that broke its promise still ends as a result
                results[i] = NotifyResult(target=target.label, ok=False, error=f"{type(exc).__name__}: {exc}")

        thread = threading.Thread(target=work, name=f"notify-{i}", daemon=True)
        thread.start()
        workers.append((i, thread, spec.timeout_s))
    started = time.monotonic()
    for i, thread, timeout in workers:
        thread.join(max(0.0, started + timeout + KILL_GRACE_S + 0.5 - time.monotonic()))
        if results[i] is None:
            results[i] = NotifyResult(target=labels[i], ok=False, error=f"no result within {timeout:g}s (timed out)")
    masked = Redactor(secrets)
    return [_clean(r, lambda text: redact(masked(text))) for r in results if r is not None]


def _clean(result: NotifyResult, redact: Callable[[str], str]) -> NotifyResult:
    """`result` as it may be journaled: its target and error masked, the error one bounded line."""
    error = " ".join(redact(result.error or "").split()) or (None if result.ok else "failed")
    if error is not None and len(error) > MAX_ERROR:
        error = error[: MAX_ERROR - 1] + "…"
    return result.model_copy(update={"target": redact(result.target), "error": error})


# ---------------------------------------------------------------------------------------------- stand-in


class Recorder:
    """The stand-in for `send`: records each request (secrets resolved, as they would be sent) and
    answers with `result` (default: delivered)."""

    def __init__(self, result: Callable[[NotifyRequest], NotifyResult] | None = None) -> None:
        self.requests: list[NotifyRequest] = []
        self._result = result
        self._lock = threading.Lock()

    def __call__(self, request: NotifyRequest) -> NotifyResult:
        with self._lock:
            self.requests.append(request)
        if self._result is not None:
            return self._result(request)
        if request.target.url is not None:
            return NotifyResult(target=request.target.label, ok=True, status=200)
        return NotifyResult(target=request.target.label, ok=True, exit=0)
