"""The read-only tools an investigation subagent works with, and the policy that sits inside them.

Whatever a model asks for, this is where it is checked: a command the policy denies is refused and
journaled; a command outside the policy's `readonly` list is not run but *requested* — the parent
graph raises a command gate for it, so a subagent is never silently denied; file tools refuse
paths that hold credentials. Everything coming back from a host is redacted and capped before a
model sees it, and it is only ever data (a tool result), never an instruction.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from agent.context import RunContext
from agent.errors import CommandRefused
from agent.exec.dispatch import run_one
from agent.exec.execute import run_spec
from agent.exec.planning import Planned, clear, command_class, plan
from agent.journal import events as ev
from agent.models import Option, Probe
from tools.commands import Verdict, classify
from tools.transport import CommandResult

MAX_RESULT_CHARS = 8_000
TOOL_TIMEOUT_S = 30.0
# What holds credentials, by where it is: their contents would leave for the model provider. One table makes both the
# credential-path check of every path a tool is given and the grep tool's exclusions, so the two cannot drift apart.
_CREDENTIAL_DIRS = (".ssh", ".aws", ".gnupg", ".docker", ".kube", ".azure")  # any directory named so
_CREDENTIAL_SUBDIRS = (".cache/huggingface", ".config/gcloud")  # grep excludes their last directory name
_CREDENTIAL_NAMES = (".env", ".netrc", ".pgpass", "credentials", "shadow", "gshadow", "environ", "cmdline",
                     ".git-credentials", ".vault-token", ".npmrc", ".pypirc", "token")  # fmt: skip
_CREDENTIAL_PARTS = ("id_rsa", "id_dsa", "id_ecdsa", "id_ed25519")  # anywhere in a file's name
_CREDENTIAL_SUFFIXES = (".pem", ".key", ".p12", ".pfx")
_CREDENTIAL_GLOBS = ("ssh_host_*_key",)


def _alternatives(names: tuple[str, ...]) -> str:
    return "|".join(re.escape(n) for n in names)


SECRET_PATH = re.compile(
    rf"(^|/)({_alternatives(_CREDENTIAL_DIRS + _CREDENTIAL_SUBDIRS)})(/|$)"
    rf"|({_alternatives(_CREDENTIAL_PARTS)})"
    rf"|({_alternatives(_CREDENTIAL_SUFFIXES)})$"
    rf"|(^|/)({_alternatives(_CREDENTIAL_NAMES)})$"
    r"|(^|/)ssh_host_[A-Za-z0-9]+_key$"
)
SECRET_EXCLUDES = shlex.join(
    [f"--exclude-dir={d}" for d in _CREDENTIAL_DIRS]
    + [f"--exclude-dir={d.rsplit('/', 1)[-1]}" for d in _CREDENTIAL_SUBDIRS]
    + [f"--exclude=*{part}*" for part in _CREDENTIAL_PARTS]
    + [f"--exclude=*{suffix}" for suffix in _CREDENTIAL_SUFFIXES]
    + [f"--exclude={name}" for name in (*_CREDENTIAL_NAMES, *_CREDENTIAL_GLOBS)]
)
# GNU grep's short options that take a value (the rest of their cluster, or the next word).
_GREP_VALUED = set("efmABCdD")


def recursive_grep(words: list[str]) -> bool:
    """Whether this grep may read directories recursively, in any spelling: `rgrep`; `-r`/`-R`, alone or in a
    cluster (`-nr`, `-inR`); `-d recurse`, `-drecurse`, `--directories=recurse` and the abbreviations getopt and
    grep accept (`-d rec`, `--direc=rec`, `--recur`, `--dereference-rec`). Every word is read as an option
    wherever it stands: which earlier option takes the next word as its value (`--color` takes one only after
    `=`) is not guessed, so `-e -r`, which searches for `-r`, is refused too."""
    name = words[0].rsplit("/", 1)[-1] if words else ""
    if name == "rgrep":
        return True

    def recurse(value: str) -> bool:
        return not value or "recurse".startswith(value)

    for i, w in enumerate(words[1:], 1):
        following = words[i + 1] if i + 1 < len(words) else ""
        if w.startswith("--"):
            option, has_value, value = w[2:].partition("=")
            if option and ("recursive".startswith(option) or "dereference-recursive".startswith(option)):
                return True
            if option and "directories".startswith(option) and recurse(value if has_value else following):
                return True
        elif w.startswith("-") and len(w) > 1:
            for k, c in enumerate(w[1:], 1):
                if c in "rR":
                    return True
                if c in _GREP_VALUED:
                    if c == "d" and recurse(w[k + 1 :] or following):
                        return True
                    break  # the rest of the cluster is this option's value
    return False


@dataclass
class ToolCall:
    tool: str
    host: str
    command: str | None = None
    path: str | None = None
    output: str = ""  # what the call gave back (redacted): what a finding citing it may quote


@dataclass
class HostToolbox:
    """One subagent's tools, bound to its option. `calls` is what it may cite as a source."""

    ctx: RunContext
    option: Option
    agent: str
    approved: frozenset[str] = frozenset()
    calls: list[ToolCall] = field(default_factory=list)
    requests: list[dict[str, str]] = field(default_factory=list)

    # -- the campaign's own probes (deterministic; both brains start from them)

    def run_probe(self, probe: Probe) -> list[CommandResult] | None:
        """The probe's results; None when the policy asks before it runs: it is then requested like any
        command a subagent wants (a command gate), and runs when the investigation is repeated."""
        waiting = [
            p
            for p in plan(self.ctx, probe)
            if command_class(self.ctx, p.command).klass == "ask" and p.command not in self.approved
        ]
        if waiting:
            for p in waiting:
                self._request(p.host.name, p.command, why=f"probe {probe.name!r}: the command policy asks first")
            return None
        try:
            results = run_spec(
                self.ctx,
                probe,
                purpose=f"probe:{probe.name}",
                option=self.option.id,
                approved=list(self.approved),
                reads_only=True,
            )
        except CommandRefused as exc:
            # A probe the policy will not run is reported (and counts against the option), never skipped.
            return [
                CommandResult(
                    host="-", command=exc.command, exit_code=None, duration_s=0.0, error=f"probe not run: {exc}"
                )
            ]
        for r in results:
            said = self.ctx.redact(f"{r.stdout_tail}\n{r.stderr_tail}\n{r.error or ''}")
            self.calls.append(ToolCall("probe", r.host, command=r.command, output=said))
        return results

    # -- the model's tools

    def dispatch(self, name: str, args: dict[str, Any]) -> tuple[str, bool]:
        """Run one tool call; (text for the model, is_error)."""
        handler = {
            "run_readonly": self.run_readonly,
            "read_file": self.read_file,
            "grep": self.grep,
            "list_dir": self.list_dir,
        }.get(name)
        if handler is None:
            return f"no tool named {name!r}; use run_readonly, read_file, grep or list_dir", True
        try:
            return handler(**args)
        except (TypeError, ValueError, AttributeError) as exc:  # a model's malformed call is its to fix
            return f"bad arguments for {name}: {exc}", True

    def run_readonly(self, host: str, command: str) -> tuple[str, bool]:
        """Run one program with its arguments — never a shell line: the words are quoted one by one,
        so `;`, `|`, `>`, `$(…)`, globs and `#` are plain characters, and what runs is exactly what
        the policy's read-only patterns were matched against (their program word by program identity:
        `cat *` is the `cat` on the host's PATH, never `tools/cat`)."""
        target = self._host(host)
        if target is None:
            return self._unknown_host(host), True
        try:
            words = shlex.split(command)
        except ValueError as exc:
            return f"cannot parse the command: {exc}", True
        if not words:
            return "empty command", True
        quoted = shlex.join(words)
        rules = self.ctx.policy.model.commands
        # Deny patterns are tried on the text the model wrote as well as on what would run.
        written = command_class(self.ctx, command)
        verdict = classify(quoted, allow=rules.readonly, ask=rules.ask, deny=rules.deny)
        denied = written if written.klass == "deny" else verdict
        secret = next((w for w in words if SECRET_PATH.search(w)), None)
        if denied.klass == "deny" or secret is not None:
            pattern = (denied.pattern or denied.reason) if denied.klass == "deny" else "credential path"
            self._refused(host, self.ctx.redact(command), pattern, denied.part if secret is None else secret)
            return f"REFUSED by the command policy (deny {pattern!r}); it was not run", True
        if words[0].rsplit("/", 1)[-1].endswith("grep") and recursive_grep(words):
            return "recursive grep is not run here (it would read credential files); use the grep tool", True
        # A person approves what will run — the model's words, each quoted — not the text it wrote (`ls README # -R /`
        # runs `ls README '#' -R /`).
        approved = quoted in self.approved or command in self.approved
        if verdict.klass != "allow" and not approved:
            self._request(host, quoted, why="not in the policy's read-only list")
            return (
                "NOT RUN: this command is not on the policy's read-only list. A person has been asked to "
                "approve it at a command gate; carry on without it, and say in your finding what it would show.",
                True,
            )
        linked = self._links_to_secret(target, host, _maybe_paths(words[1:]), shown=command)
        if linked is not None:
            return linked, True
        call = ToolCall("run_readonly", host, command=command)
        self.calls.append(call)
        text, failed = self._run(target, quoted, tool="run_readonly", verdict=verdict, approved=approved)
        call.output = text
        return text, failed

    def _request(self, host: str, command: str, *, why: str) -> None:
        request = {"host": host, "command": command}
        if request not in self.requests:
            self.requests.append(request)
            self.ctx.journal.append(
                ev.PermissionRequestedEvent(
                    option=self.option.id, host=host, command=self.ctx.redact(command), why=why
                ),
                actor=self.agent,
            )

    def read_file(self, host: str, path: str, start: int = 1, end: int = 200) -> tuple[str, bool]:
        start, end = max(1, int(start)), max(1, int(end))
        if end < start:
            return "end must be at or after start", True
        end = min(end, start + 999)
        script = f"awk -v s={start} -v e={end} 'NR>=s && NR<=e {{printf \"%d: %s\\n\", NR, $0}} NR>e {{exit}}' "
        return self._file_tool("read_file", host, path, script + _arg(path))

    def grep(self, host: str, pattern: str, path: str = ".") -> tuple[str, bool]:
        command = f"grep -rnI -E -m 200 {SECRET_EXCLUDES} -e {shlex.quote(pattern)} -- {_arg(path)}"
        return self._file_tool("grep", host, path, command)

    def list_dir(self, host: str, path: str = ".") -> tuple[str, bool]:
        return self._file_tool("list_dir", host, path, f"ls -la -- {_arg(path)}")

    # -- plumbing

    def _file_tool(self, tool: str, host: str, path: str, command: str) -> tuple[str, bool]:
        target = self._host(host)
        if target is None:
            return self._unknown_host(host), True
        if SECRET_PATH.search(path):
            self._refused(host, f"{tool} {path}", "credential path", path)
            return f"REFUSED: {path} looks like a credential file; its contents never leave the host", True
        verdict = self._own_command(command)
        if verdict.klass != "allow":
            return f"REFUSED by the command policy ({verdict.klass} {verdict.pattern or verdict.reason!r})", True
        linked = self._links_to_secret(target, host, [path], shown=f"{tool} {path}")
        if linked is not None:
            return linked, True
        call = ToolCall(tool, host, path=path)
        self.calls.append(call)
        text, failed = self._run(target, command, tool=tool, verdict=verdict)
        call.output = text
        if tool == "grep":
            # What grep printed was read too: a finding may cite path:line from its output.
            for found in dict.fromkeys(re.findall(r"^([^\s:][^:\n]*):\d+:", text, re.M)):
                # Each file found holds only its own lines: a quote is pinned to the file that printed it.
                mine = "\n".join(line for line in text.splitlines() if line.startswith(found + ":"))
                self.calls.append(ToolCall("grep", host, path=found, output=mine))
        return text, failed

    def _own_command(self, command: str) -> Verdict:
        """The verdict on a command the tools themselves write (a file tool's, a path resolution): it is allowed as
        it is, but never past the policy's deny patterns."""
        return classify(command, allow=["*"], ask=[], deny=self.ctx.policy.model.commands.deny)

    def _run(self, host: Any, command: str, *, tool: str, verdict: Verdict, approved: bool = False) -> tuple[str, bool]:
        cleared = clear(Planned(host=host, command=command), verdict, {command} if approved else ())
        if cleared is None:  # the callers checked the verdict; this is what makes that check the one that counts
            return f"REFUSED by the command policy ({verdict.klass}); it was not run", True
        self.ctx.journal.append(
            ev.SubagentToolEvent(option=self.option.id, tool=tool, host=host.name), actor=self.agent
        )
        result = run_one(
            self.ctx, cleared, purpose=f"investigate:{tool}", option=self.option.id, timeout=TOOL_TIMEOUT_S
        )
        return render_result(result, self.ctx.redact), not result.ok

    def _links_to_secret(self, target: Any, host: str, paths: list[str], *, shown: str) -> str | None:
        """Resolve `paths` on the host (symlinks followed, as the program would) and refuse when one lands on a
        credential path: `notes -> ~/.ssh/id_rsa` is read as the key it is. None when all are clear."""
        if not paths:
            return None
        if any("\n" in p for p in paths):
            return f"REFUSED: a path in {shown!r} holds a line break"
        each = " ".join(shlex.quote(p) for p in paths)
        script = f'for a in {each}; do realpath -e -- "$a" 2>/dev/null || echo; done'
        cleared = clear(Planned(host=target, command=script), self._own_command(script))
        unresolved = f"REFUSED: the paths of {shown!r} could not be resolved on the host to check them"
        if cleared is None:
            return unresolved
        purpose = "investigate:resolve"
        result = run_one(
            self.ctx, cleared, purpose=purpose, option=self.option.id, timeout=TOOL_TIMEOUT_S, reads_only=True
        )
        resolved = result.stdout_tail.split("\n")[: len(paths)]
        if not result.ok or result.stdout_truncated or len(resolved) < len(paths):
            return unresolved
        for given, real in zip(paths, resolved, strict=True):
            if real and SECRET_PATH.search(real):
                self._refused(host, self.ctx.redact(shown), "credential path", f"{given} -> {real}")
                return f"REFUSED: {given} resolves to {real}, a credential file; its contents never leave the host"
        return None

    def _refused(self, host: str, command: str, pattern: str | None, part: str) -> None:
        self.ctx.journal.append(
            ev.CommandRefusedEvent(
                purpose="investigate",
                option=self.option.id,
                host=host,
                command=command,
                klass="deny",
                pattern=pattern,
                part=part,
            ),
            actor=self.agent,
        )

    def _host(self, name: str) -> Any:
        return next((h for h in self.ctx.campaign.hosts if h.name == name), None)

    def _unknown_host(self, name: str) -> str:
        return f"no host named {name!r}; hosts: {', '.join(h.name for h in self.ctx.campaign.hosts)}"

    def cites(self, host: str, command: str | None, path: str | None, excerpt: str | None = None) -> bool:
        """Whether this subagent actually ran that command or read that path on that host — and, given `excerpt`,
        whether that call's output holds it (whitespace aside): a claim may rest only on what the call said."""
        for c in self.calls:
            if c.host != host:
                continue
            named = (command is not None and c.command is not None and _same(c.command, command)) or (
                path is not None and c.path is not None and _same(c.path, path)
            )
            if named and (excerpt is None or _quoted(excerpt, c.output)):
                return True
        return False


def _maybe_paths(words: list[str]) -> list[str]:
    """Every word a program might open: each word itself (after `--` a `-notes` is a file, and a program's own
    options are not known here), an option's `=value`, and what follows a short option's letter (`-fnotes`)."""
    out: list[str] = []
    for w in words:
        out.append(w)
        if w.startswith("--") and "=" in w:
            out.append(w.split("=", 1)[1])
        elif w.startswith("-") and not w.startswith("--") and len(w) > 2:
            out.append(w[2:])
    return list(dict.fromkeys(p for p in out if p))


MIN_QUOTE = 12  # characters a quote must hold once squeezed: `e` or a bare line number is in any output


def _quoted(excerpt: str, output: str) -> bool:
    """Whether `output` holds `excerpt` (whitespace and read_file line numbers aside), and the quote says something."""
    quote = _squeezed(excerpt)
    return len(quote) >= MIN_QUOTE and quote in _squeezed(output)


def _squeezed(text: str) -> str:
    """Text with every run of whitespace as one space, and a read_file line's `12: ` number dropped."""
    return " ".join(re.sub(r"(?m)^\s*\d+: ", "", text).split())


def _same(a: str, b: str) -> bool:
    def norm(x: str) -> str:
        x = " ".join(x.split())
        return x[2:] if x.startswith("./") else x

    return norm(a) == norm(b)


def _arg(path: str) -> str:
    # A path starting with "-" would be read as an option by awk and ls.
    return shlex.quote(path if not path.startswith("-") else "./" + path)


def render_result(result: CommandResult, redact: Any) -> str:
    if result.error:
        return f"error: {result.error}"
    status = "timed out (killed)" if result.timed_out else f"exit {result.exit_code}"
    out = result.stdout_tail
    err = result.stderr_tail.strip()
    text = f"{status}\n{out}" + (f"\n[stderr]\n{err}" if err else "")
    text = redact(text)
    if len(text) > MAX_RESULT_CHARS:
        text = text[:MAX_RESULT_CHARS] + f"\n[… {len(text) - MAX_RESULT_CHARS} more characters not shown]"
    return text
