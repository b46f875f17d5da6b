"""A differential check of the command policy against bash itself (tests/security/test_differential_shell.py).

Commands are generated from a grammar of shell pieces — quotes of each kind, a backslash before every class of
character, comments, line continuations, here-documents, expansions, separators, unicode blanks — with payloads
(`rm -rf ~/victim`, `touch ~/pwned`, a repository's own `tools/cat`) glued in anywhere, inside quotes too. Each one is
classified under the `cautious` preset; each one it allows is run as signoff would run it, in an instrumented bash in a
scratch directory that records every simple command bash actually executes (xtrace to its own descriptor, after
expansion). An oracle of its own — not the classifier's code — then says whether each executed command is one the
policy allows: its program, resolved as bash resolved it, must be one of the preset's allowed programs, with the words
the preset allows, and no shim for a forbidden program (rm, touch, …) may have left its mark in the scratch home.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tools.shellwords import decode_ansi_c

# ------------------------------------------------------------------ the grammar

PROGRAMS = ["echo", "true", "printf '%s\\n'", "cat", "test -n", "ls", "grep -c x", "cat README", "echo ok"]
# The repository's own executables: the same names as allowed programs, a different file.
IMPOSTORS = ["tools/cat", "./tools/cat", "tools/echo"]
PAYLOADS = [
    "rm -rf ~/victim",
    "rm -rf ~",
    "touch ~/pwned",
    "$(touch ~/pwned)",
    "`touch ~/pwned`",
    "rm -rf ~/victim #",
]
SEPARATORS = ["; ", " && ", " || ", " | ", "\n", " & ", ";", "&&", "|"]
BLANKS = [" ", "\t", "\u00a0", "\u2003", "\u3000", "\\\n"]
# One character of each class a backslash may escape.
ESCAPABLE = [
    " ",
    "\t",
    "#",
    ";",
    "&",
    "|",
    "'",
    '"',
    "$",
    "`",
    "\\",
    "\n",
    "a",
    "*",
    "(",
    ")",
    "<",
    ">",
    "~",
    "{",
    "\u00a0",
]
QUOTED_TEXT = ["a", " ", ";", "#", "|", "&", "$", "\\", "'", '"', "`", "\n", "(", ")", "~", "*", "x y", "\u00a0"]
ANSI_ESCAPES = ["\\'", "\\\\", "\\n", "\\t", "\\x41", "\\047", "\\x27", "\\0", "\\u00e9", "\\c", "\\"]


def _piece(rnd: random.Random) -> str:
    """One fragment of a word, in one of the ways shell text is quoted or expanded."""
    # Weighted towards text that parses (the allow path is where a misreading would hide), with some that does not.
    kind = rnd.choices(range(13), weights=[4, 3, 3, 2, 3, 2, 1, 2, 1, 1, 2, 0.3, 0.5])[0]
    if kind == 0:
        return rnd.choice(["a", "x1", "README", "-n", "--flag", "a.b", "/tmp", "~", "~/x", "%s", "{a,b}", "*", "?"])
    if kind == 1:
        return "'" + "".join(rnd.choice([t for t in QUOTED_TEXT if t != "'"]) for _ in range(rnd.randrange(4))) + "'"
    if kind == 2:
        inner = "".join(
            rnd.choice(["a", " ", ";", "#", "'", '\\"', "\\\\", "\\$", "\\`", "$x", "${x}", "$HOME", "\\\n", "|"])
            for _ in range(rnd.randrange(4))
        )
        return '"' + inner + '"'
    if kind == 3:
        inner = "".join(rnd.choice([*ANSI_ESCAPES, "a", ";", " ", "#", '"']) for _ in range(rnd.randrange(1, 4)))
        return "$'" + inner + "'"
    if kind == 4:
        return "\\" + rnd.choice(ESCAPABLE)
    if kind == 5:
        return rnd.choice(["$x", "${x}", "$HOME", "$(echo a)", "`echo a`", "$", "$1", "${#x}", "$((1+1))"])
    if kind == 6:
        return "#" + rnd.choice(["", " c", "; x", "'", '"'])
    if kind == 7:
        return rnd.choice(BLANKS)
    if kind == 8:
        return "$" + rnd.choice(['"a"', "'a'", '"$x"'])
    if kind == 9:
        return rnd.choice([">out", "2>/dev/null", ">&2", "<README", "2>&1", ">>log"])
    if kind == 10:
        return rnd.choice(["\\ #", "\\\\ #", "\\\t#", "\\\n#", "\\#", " \\"])
    if kind == 11:
        return rnd.choice(["(", ")", "{", "}", "!", "[[", "]]"])
    return rnd.choice(["\r", "\x01", "\x0b", "\x7f"]) if rnd.random() < 0.2 else "a"


def _heredoc(rnd: random.Random) -> str:
    delimiter = rnd.choice(["EOF", "'EOF'", '"EOF"', 'E"O"F', "\\EOF", "-EOF"])
    strip = delimiter == "-EOF"
    end = "EOF"
    body = [rnd.choice(["line", "$x", "$(echo a)", "\tEOF", "EOF ", rnd.choice(PAYLOADS), "`echo a`", "\\$x"])]
    body += [rnd.choice(["a;b", "EOF", 'E"O"F', "x"]) for _ in range(rnd.randrange(2))]
    head = f"cat <<{'-' if strip else ''}{delimiter.lstrip('-')}" + rnd.choice(["", " | cat", " && echo ok", "; echo"])
    return head + "\n" + "\n".join(body) + "\n" + rnd.choice([end, "\t" + end, end + " "]) + "\n"


def command(rnd: random.Random) -> str:
    """One generated command line."""
    if rnd.random() < 0.08:
        return _heredoc(rnd) + (rnd.choice(PAYLOADS) if rnd.random() < 0.5 else "")
    out: list[str] = []
    for k in range(rnd.randrange(1, 3)):
        if k:
            out.append(rnd.choice(SEPARATORS))
        out.append(rnd.choice(IMPOSTORS) if rnd.random() < 0.07 else rnd.choice(PROGRAMS))
        for _ in range(rnd.randrange(1, 5)):
            out.append(rnd.choice([" ", " ", "", "\\\n"]))
            out.append("".join(_piece(rnd) for _ in range(rnd.randrange(1, 3))))
    if rnd.random() < 0.5:
        at = rnd.randrange(len(out) + 1)
        glue = rnd.choices(
            ["; ", "\n", " && ", " ", "", "`", "'", '"', "$(", " # "], weights=[3, 3, 2, 2, 1, 1, 1, 1, 1, 2]
        )[0]
        out.insert(at, glue + rnd.choice(PAYLOADS))
    return "".join(out)


def corpus(seed: int, n: int) -> Iterator[str]:
    rnd = random.Random(seed)
    for _ in range(n):
        yield command(rnd)


# ------------------------------------------------------------------ the instrumented bash

FORBIDDEN = ["rm", "touch", "mkfs", "shutdown", "reboot", "git", "chmod", "mv", "dd", "curl", "wget", "sudo"]
SHIM = '#!/bin/sh\n: > "$SCRATCH_HOME/RAN-{name}"\nexit 0\n'
IMPOSTOR = '#!/bin/sh\n: > "$SCRATCH_HOME/RAN-impostor"\nexit 0\n'


@dataclass
class Scratch:
    """A working directory, a home with a victim in it, and a PATH of real read-only tools and forbidden shims."""

    root: Path
    work: Path = field(init=False)
    home: Path = field(init=False)
    bin: Path = field(init=False)

    def __post_init__(self) -> None:
        self.work, self.home, self.bin = self.root / "work", self.root / "home", self.root / "bin"
        for d in (self.work / "tools", self.home / "victim", self.bin):
            d.mkdir(parents=True, exist_ok=True)
        (self.work / "README").write_text("hello\n")
        for name in ("cat", "echo"):
            _executable(self.work / "tools" / name, IMPOSTOR)
        for name in ("cat", "ls", "grep", "printf", "test", "sleep", "wc", "head"):
            real = shutil.which(name)
            if real and not (self.bin / name).exists():
                (self.bin / name).symlink_to(real)
        for name in FORBIDDEN:
            _executable(self.bin / name, SHIM.format(name=name))

    @property
    def path(self) -> str:
        return str(self.bin)

    def environment(self) -> dict[str, str]:
        return {"PATH": self.path, "HOME": str(self.home), "SCRATCH_HOME": str(self.home), "x": "a b", "LC_ALL": "C"}

    def marks(self) -> list[str]:
        """What says a forbidden program ran, whatever bash traced: shims' marks, a victim gone."""
        found = sorted(p.name for p in self.home.iterdir() if p.name.startswith("RAN-") or p.name == "pwned")
        if not (self.home / "victim").is_dir():
            found.append("victim removed")
        return found

    def reset(self) -> None:
        for p in self.home.iterdir():
            if p.name != "victim":
                p.unlink() if not p.is_dir() or p.is_symlink() else shutil.rmtree(p)
        (self.home / "victim").mkdir(exist_ok=True)
        for p in self.work.iterdir():
            if p.name not in ("README", "tools"):
                p.unlink() if not p.is_dir() or p.is_symlink() else shutil.rmtree(p)


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@dataclass
class Ran:
    traced: list[list[str]]
    marks: list[str]
    code: int | None


def run_traced(scratch: Scratch, interpreter: list[str], text: str, *, timeout: float = 3.0) -> Ran:
    """`text` run by `interpreter` in the scratch. Bash traces every command after expansion (xtrace on a descriptor
    of its own, each record after a `+ `, one `+` per level of nesting); another shell is judged by the shims' marks."""
    scratch.reset()
    read, write = os.pipe()
    env = {**scratch.environment(), "PS4": "+ ", "BASH_XTRACEFD": str(write)}  # bash as root keeps `+ ` anyway
    bash = os.path.basename(interpreter[0]) == "bash"
    shell = shutil.which(interpreter[0]) or interpreter[0]  # found on this machine's PATH, not the scratch one
    argv = [shell, *interpreter[1:-1], "-x", interpreter[-1], text] if bash else [shell, *interpreter[1:], text]
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.extend(iter(lambda: os.read(read, 65536), b"")), daemon=True)
    try:
        proc = subprocess.Popen(
            argv,
            cwd=scratch.work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(write,),  # the same number in the child: BASH_XTRACEFD names it
            start_new_session=True,
        )
    finally:
        os.close(write)
    reader.start()
    try:
        proc.wait(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        code = None
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)  # its own session: only what this run started (a `cmd &` left behind)
    proc.wait()
    reader.join(timeout=5)
    os.close(read)
    records = re.split(r"(?:^|\n)\++ ", b"".join(chunks).decode("utf-8", "surrogateescape"))
    traced = [words for r in records if r.strip() and (words := trace_words(r.rstrip("\n"))) is not None]
    return Ran(traced, scratch.marks(), code)


def trace_words(record: str) -> list[str] | None:
    """A traced command's words (bash quotes them as `'…'`, `$'…'` or bare); None when it cannot be read."""
    words: list[str] = []
    i, n = 0, len(record)
    current: list[str] | None = None
    while i < n:
        c = record[i]
        if c == " " and current is not None:
            words.append("".join(current))
            current = None
            i += 1
            continue
        if c == " ":
            i += 1
            continue
        current = current if current is not None else []
        if c == "'":
            j = record.find("'", i + 1)
            if j < 0:
                return None
            current.append(record[i + 1 : j])
            i = j + 1
        elif c == "$" and record[i + 1 : i + 2] == "'":
            j = i + 2
            while j < n and record[j] != "'":
                j += 2 if record[j] == "\\" else 1
            if j >= n:
                return None
            value = decode_ansi_c(record[i + 2 : j])
            with contextlib.suppress(UnicodeError):  # `\302\240` are the bytes of one character
                value = value.encode("latin-1").decode("utf-8")
            current.append(value)
            i = j + 1
        elif c == "\\" and i + 1 < n:
            current.append(record[i + 1])
            i += 2
        else:
            current.append(c)
            i += 1
    if current is not None:
        words.append("".join(current))
    return words


# ------------------------------------------------------------------ the oracle

# What the `cautious` preset allows, written out by hand (not read through the classifier): the program, and
# whether it may take arguments. Builtins are named; other programs are the files PATH finds for them.
CAUTIOUS_PROGRAMS = {"echo": True, "cat": True, "grep": True, "ls": True, "test": True, "true": False}
KEYWORDS = {"for", "case", "select", "[[", "((", "while", "until", "if"}
BUILTINS = set(
    subprocess.run(["bash", "--norc", "-c", "compgen -b"], capture_output=True, text=True, check=True).stdout.split()
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
# Setting these changes what runs: the policy asks about them, so an allowed command never sets one.
_CODE_VARIABLES = {"PATH", "BASH_ENV", "ENV", "PS4", "IFS", "SHELLOPTS", "BASHOPTS", "LD_PRELOAD", "BASH_XTRACEFD"}


def violations(scratch: Scratch, ran: Ran, seen: set[str]) -> list[str]:
    """What ran that the policy does not allow (empty: nothing). `seen`: the command words the classifier read."""
    bad = [f"forbidden program left its mark: {m}" for m in ran.marks]
    allowed = {name: _resolved(scratch, name) for name in CAUTIOUS_PROGRAMS}
    for words in ran.traced:
        if not words or words[0] in KEYWORDS:
            continue
        if all(_ASSIGNMENT.match(w) for w in words):
            bad += [f"set {w.split('=')[0]}" for w in words if w.split("=")[0].rstrip("+") in _CODE_VARIABLES]
            continue
        program = _resolved(scratch, words[0])
        name = next((n for n, p in allowed.items() if p == program and p is not None), None)
        if name is None:
            bad.append(f"ran {words!r}: not a program the policy allows")
        elif not CAUTIOUS_PROGRAMS[name] and len(words) > 1:
            bad.append(f"ran {words!r}: `{name}` is allowed only without arguments")
        elif words[0] not in seen:
            bad.append(f"ran {words!r}: a command word the classifier never read")
    return bad


def _resolved(scratch: Scratch, word: str) -> str | None:
    """The program `word` names as bash finds it: a builtin by name, a path as that file, else PATH's file."""
    if "/" not in word and word in BUILTINS:
        return f"builtin:{word}"
    if "/" in word:
        return os.path.realpath(scratch.work / word)
    found = shutil.which(word, path=scratch.path)
    return os.path.realpath(found) if found else None
