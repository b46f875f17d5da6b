"""Text that reports, tables and terminals show on one line: a name, a title, a note.

A line break in one is not a formatting accident: an option title holding `\n| g9 | … | human:alice |` wrote a
decision row into REPORT.md, and a control character in one reaches every terminal that shows it. Such a field
refuses them where the file is read, at its line.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _one_line(value: str) -> str:
    found = _CONTROL.search(value)
    if found is not None:
        what = "a line break" if found.group(0) in "\n\r\u2028\u2029" else f"a control character ({found.group(0)!r})"
        raise ValueError(f"must be one line of text, and it holds {what}")
    return value


OneLine = Annotated[str, AfterValidator(_one_line)]
