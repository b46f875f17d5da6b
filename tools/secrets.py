"""Secrets never reach the journal, artifacts, logs or the screen: every command line and every
byte of output passes through a `Redactor` before it is stored or shown.

A value is masked in every form a reader could meet it in (`representations`), and output is masked
as a byte stream (`StreamRedactor`), so a value split across two reads, or across lines, is still
caught. Secrets reach a command on stdin in a form any byte sequence survives (`delivery_script`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence

SECRET_NAME = re.compile(r"(?i)(^|_)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE)(_|$)|^PASSWORD")
MASK = "***"
_MASK = MASK.encode()
MIN_LEN = 4  # shorter values (and shorter lines of a multi-line value) would mask ordinary words


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


def _bytes(text: str) -> bytes:
    # Environment values that were not UTF-8 arrive as surrogate escapes: give back their original bytes.
    return text.encode("utf-8", "surrogateescape")


def representations(value: str) -> set[str]:
    """Every form of `value` that must be masked.

    Commands print a value with or without its trailing newline (`echo` vs `printf %s`), tools trim it,
    and a multi-line value (a PEM key) is often printed, grepped or logged one line at a time, so each
    line on its own is a secret too. The JSON-escaped form is what a command that emits JSON prints.
    Forms shorter than MIN_LEN are skipped: masking a 2-character line would mask ordinary output
    everywhere (and say which characters the key holds).
    """
    forms = {value, value.strip()}
    lines = value.splitlines()
    if len(lines) > 1:
        forms.update(line.strip() for line in lines)
    for form in list(forms):
        forms.update(json.dumps(form, ensure_ascii=escaped)[1:-1] for escaped in (False, True))
    return {f for f in forms if len(f) >= MIN_LEN}


class Redactor:
    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values: set[str] = set()
        self._forms: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._bytes: re.Pattern[bytes] | None = None
        self._longest = 0
        self._starts: dict[int, list[bytes]] = {}  # first byte → byte forms that start with it
        self.add(*values)

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Redactor:
        env = os.environ if env is None else env
        return cls(v for k, v in env.items() if is_secret_name(k))

    def add(self, *values: str) -> None:
        new = {v for v in values if v} - self._values
        if not new:
            return
        self._values |= new
        for v in new:
            self._forms |= representations(v)
        if not self._forms:
            return
        # Longest first: where one form contains another (the value and its trimmed form), the whole
        # of it is masked, not a part that leaves the rest in the clear. Escaped literals in one
        # alternation keep a single linear pass however many secrets there are.
        ordered = sorted(self._forms, key=lambda f: (-len(_bytes(f)), f))
        self._pattern = re.compile("|".join(re.escape(f) for f in ordered))
        encoded = [_bytes(f) for f in ordered]
        self._bytes = re.compile(b"|".join(re.escape(f) for f in encoded))
        self._longest = len(encoded[0])
        starts: dict[int, list[bytes]] = {}
        for f in encoded:
            starts.setdefault(f[0], []).append(f)
        self._starts = starts

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(MASK, text)

    def redact_bytes(self, data: bytes) -> bytes:
        if self._bytes is None or not data:
            return data
        return self._bytes.sub(_MASK, data)

    def stream(self) -> StreamRedactor:
        """A redactor for one output stream, fed in chunks as they are read."""
        return StreamRedactor(self._bytes, self._longest, self._starts)

    def __bool__(self) -> bool:
        return self._pattern is not None


class StreamRedactor:
    """Masks a byte stream that arrives in arbitrary chunks, with exactly the result of masking it whole.

    It holds back the tail from the first position where a secret could still be starting (at most the
    longest form less one byte), so a value split across two reads is caught, while output that cannot
    be the start of one passes at once (a progress line is not kept back waiting for more output).
    """

    def __init__(self, pattern: re.Pattern[bytes] | None, longest: int, starts: dict[int, list[bytes]]) -> None:
        # A snapshot of the redactor's (`Redactor.stream`): a secret added later must not change how this stream's
        # held-back tail is read. `add` replaces those three, never changes them in place.
        self._pattern = pattern
        self._longest = longest
        self._starts = starts
        self._first = re.compile(b"[" + b"".join(re.escape(bytes([b])) for b in self._starts) + b"]")
        self._carry = b""

    def feed(self, chunk: bytes) -> bytes:
        """The part of the stream so far that is final, masked."""
        if self._pattern is None:
            return chunk
        data = self._carry + chunk if self._carry else chunk
        hold = self._hold(data)
        out: list[bytes] = []
        done = 0
        for m in self._pattern.finditer(data):
            if m.start() >= hold:
                break  # it may yet be a longer form once more bytes arrive: decide then
            out += (data[done : m.start()], _MASK)
            done = m.end()
        cut = max(hold, done)
        out.append(data[done:cut])
        self._carry = data[cut:]
        return b"".join(out)

    def flush(self) -> bytes:
        """The held-back tail at the end of the stream, masked."""
        data, self._carry = self._carry, b""
        return self._pattern.sub(_MASK, data) if self._pattern is not None and data else data

    def _hold(self, data: bytes) -> int:
        """Where the held-back tail starts: the first position whose rest of `data` is a proper prefix of
        some form. Every position before it is decided now, since any form starting there either fits
        in `data` or is already ruled out by its bytes."""
        n = len(data)
        # Only positions holding the first byte of some form can start one: let re find those.
        for m in self._first.finditer(data, max(0, n - self._longest + 1)):
            i = m.start()
            rest = data[i:]
            for form in self._starts[data[i]]:  # longest first: stop at the first one that would fit
                if len(form) <= n - i:
                    break
                if form.startswith(rest):
                    return i
        return n


# ------------------------------------------------------------------ delivery


class UndeliverableSecret(ValueError):
    """A secret value that no shell variable can hold."""


# Letters only: a digit right after an escape could be read as a fourth octal digit by some printf.
_PLAIN = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_READ_VAR = "__signoff_secret"


def encode_for_delivery(name: str, value: str) -> bytes:
    """`value` as one line of stdin that the `delivery_script` turns back into exactly its bytes.

    Every byte but an ASCII letter becomes a `\\ooo` octal escape, which the `printf` builtin
    of every POSIX shell decodes in its format: no newline, CR, quote, `%` or backslash is left for
    `read` or the shell to interpret, and no external tool (base64 differs between systems) is needed.
    A NUL is refused: shell variables are C strings, so it would silently cut the value short.
    """
    raw = _bytes(value)
    if b"\0" in raw:
        raise UndeliverableSecret(
            f"secret {name} contains a NUL byte, which no shell variable can hold; refusing to deliver it cut short"
        )
    return "".join(chr(b) if b in _PLAIN else f"\\{b:03o}" for b in raw).encode() + b"\n"


def delivery_script(names: Sequence[str]) -> str:
    """Shell that reads each secret's line from stdin (in the order of `names`) and exports it.

    `$(...)` strips trailing newlines, so a sentinel `x` follows the value and is removed after. Only
    builtins see the value (read, printf, export): it never appears on a command line (argv).
    """
    return "".join(
        f'IFS= read -r {_READ_VAR}; {name}=$(printf "${_READ_VAR}"; printf x); {name}=${{{name}%x}}; export {name}; '
        for name in names
    ) + (f"unset {_READ_VAR}; " if names else "")
