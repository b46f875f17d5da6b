"""pytest's rewritten test modules, written once before the workers start.

pytest rewrites every test module's asserts as it imports it and keeps the result in a pyc of its own, unless
PYTHONDONTWRITEBYTECODE is set, as it is on CI: then each of `make test`'s six workers rewrote all of them again
while collecting, 6.5 s of CPU each (collection took 10.7 s of CPU cold and 4.9 s with the rewritten pycs there),
on a machine with two cores. The controller, which collects nothing under xdist, writes them here first, in two
forked processes; a worker finds them as pytest always looks for them (a pyc older than its source is not used).
This follows the choice the Makefile made for our own modules (compileall writes their pycs whatever that variable
says). It leans on pytest's private rewriting functions: if they are missing or fail, nothing is written and the
workers rewrite as before.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def warm(config: pytest.Config) -> None:
    try:
        from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc, assertstate_key
    except ImportError:
        return
    state = config.stash.get(assertstate_key, None)
    if state is None:  # assertion rewriting is off (--assert=plain): nothing to warm
        return
    files = sorted(p for p in TESTS.rglob("*.py") if p.name == "conftest.py" or p.name.startswith("test_"))
    files = [p for p in files if "fixtures" not in p.relative_to(TESTS).parts]

    def write(part: list[Path]) -> None:
        for fn in part:
            pyc = fn.parent / "__pycache__" / (fn.name[:-3] + PYC_TAIL)
            if _read_pyc(fn, pyc, state.trace) is not None:
                continue  # already rewritten for this source
            (fn.parent / "__pycache__").mkdir(exist_ok=True)
            source_stat, co = _rewrite_test(fn, config)
            _write_pyc(state, co, source_stat, pyc)

    children = []
    for part in (files[0::2], files[1::2]):
        pid = os.fork()
        if pid == 0:  # the child: its exit status is all it reports
            code = 0
            try:
                write(part)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        children.append(pid)
    for pid in children:  # our own two children, by pid
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
