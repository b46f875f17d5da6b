"""Names that say what a thing is: every journal event model is named `…Event` (its `kind` string is what the journal
holds, unchanged), and no two public classes in the product share a name (a `Decision` that is sometimes the policy's
model and sometimes the journal's event is how a reader imports the wrong one)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from agent.journal import events as ev

ROOT = Path(__file__).resolve().parents[2]


def test_every_journal_event_model_is_named_event() -> None:
    models = [*ev.MODELS.values(), ev.UnrecognizedEvent]
    assert len(models) > 50
    assert [m.__name__ for m in models if not m.__name__.endswith("Event")] == []
    # the names changed, the journal's words did not
    assert ev.MODELS["gate.opened"] is ev.GateOpenedEvent and ev.MODELS["decision"] is ev.DecisionEvent


def test_no_two_public_classes_share_a_name() -> None:
    where: defaultdict[str, list[str]] = defaultdict(list)
    for package in ("agent", "policies", "tools", "tui"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    where[node.name].append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}
