"""One error tree, one exit-code table: every error signoff raises on purpose maps to an exit code."""

from __future__ import annotations

import importlib
import inspect

import pytest

from agent import errors
from agent.errors import BAD_INPUT, FAILED, FOREIGN, INTERRUPTED, UNVERIFIED, SessionError, SignoffError, exit_code

OURS = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, BaseException)]


@pytest.mark.parametrize("cls", OURS, ids=lambda c: c.__name__)
def test_every_error_is_a_signoff_error_with_a_sentence_and_an_exit_code(cls: type[BaseException]) -> None:
    assert issubclass(cls, SignoffError)
    assert cls.__doc__ and cls.__doc__.strip().endswith(".")
    assert cls.exit_code in (BAD_INPUT, FAILED, UNVERIFIED)  # type: ignore[attr-defined]
    assert exit_code(cls.__new__(cls)) == cls.exit_code  # type: ignore[attr-defined]  (no constructor: any instance)


@pytest.mark.parametrize("where", sorted(FOREIGN), ids=lambda w: ".".join(w))
def test_the_table_names_real_classes_of_tools_and_policies(where: tuple[str, str]) -> None:
    module, name = where
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, Exception) and not issubclass(cls, SignoffError)


def test_exit_codes_come_from_the_one_table() -> None:
    from policies.decisions import NotUnderstood
    from tools.artifacts import StorageFull

    assert exit_code(SessionError("no such session")) == BAD_INPUT
    assert exit_code(errors.RunFailed("boom")) == FAILED
    assert exit_code(errors.JournalUnverified("s", "history rewritten")) == UNVERIFIED  # a code of its own
    assert exit_code(NotUnderstood("huh")) == BAD_INPUT  # a subclass of a class the table names
    assert exit_code(StorageFull(28, "disk full")) == FAILED
    assert exit_code(KeyboardInterrupt()) == INTERRUPTED
    assert exit_code(ZeroDivisionError()) is None  # a bug keeps its traceback


def test_no_error_class_is_defined_outside_the_errors_module_in_agent() -> None:
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "agent"
    found = []
    for path in root.rglob("*.py"):
        if path.name == "errors.py" and path.parent == root:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                getattr(b, "id", "").endswith(("Error", "Exception")) or getattr(b, "id", "") == "SessionError"
                for b in node.bases
            ):
                found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name}")
    assert not found, found
