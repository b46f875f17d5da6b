"""Secrets never reach the journal, artifacts, logs or the screen: every command line and every
line of output passes through a `Redactor` before it is stored or shown.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

SECRET_NAME = re.compile(r"(?i)(^|_)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE)(_|$)|^PASSWORD")
MASK = "***"
MIN_LEN = 4  # shorter values would mask ordinary words


def is_secret_name(name: str) -> bool:
    return bool(SECRET_NAME.search(name))


class Redactor:
    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self.add(*values)

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Redactor:
        env = os.environ if env is None else env
        return cls(v for k, v in env.items() if is_secret_name(k))

    def add(self, *values: str) -> None:
        new = {v for v in values if v and len(v) >= MIN_LEN} - self._values
        if new:
            self._values |= new
            alternatives = sorted(self._values, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(v) for v in alternatives))

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(MASK, text)

    def __bool__(self) -> bool:
        return bool(self._values)
