"""Policies that build on others: `extends: cautious` (a preset) or `extends: ../team.yaml` (a path
relative to the file that says it). Each file is checked on its own, at its own file:line; the chain is
then merged into one policy whose text — a self-contained YAML document with no `extends:` — is what a
session copies and journals, with each file's sha256 beside it (`Policy.parts`): replay and
counterfactuals never read a file again, and a parent that changes shows as the policy changing.

The merge, child over parent:
- command lists are the parent's followed by the child's (deny still beats ask beats allow, whatever
  the order: the command policy ranks classes, not positions);
- per gate, the child's rules go after the parent's last guard (`guard: true`: a safety rule such as the
  presets' `skip-unsafe`, which fails closed) and before the parent's other rules; a child's rule marked
  `before_guards: true` goes before all of the parent's. The parent's own order is never changed, so a rule
  the parent tries before a guard stays before the child's too. A gate's settings (on_error,
  headless_default, deadline/on_deadline), the budgets, brain and description are the child's where it
  sets them; notify targets add up;
- each file's `tests:` run against the policy as resolved up to that file (a child may change what its
  parent decides; the parent's tests still hold for the parent), and only the named file's are kept in
  the resolved text, where they run again on every load.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, cast

import yaml

from policies.gates import GateKind
from policies.schema import PRESETS_DIR, PolicyFile, RuleSpec, SourceError
from policies.yamlsrc import YamlSource

MAX_CHAIN = 8  # files in one chain: real ones are two or three deep


class Link:
    """One file of a chain: its source, its validated model, and how the file below named it."""

    def __init__(self, source: YamlSource, model: PolicyFile, label: str) -> None:
        self.source, self.model, self.label = source, model, label
        self.sha256 = hashlib.sha256(source.text.encode()).hexdigest()


def locate(ref: str, beside: Path, source: YamlSource) -> tuple[Path, str]:
    """The file `extends: ref` names: a path relative to the file that says it, else a preset by name."""
    ref = ref.strip()
    candidate = Path(ref).expanduser()
    if not candidate.is_absolute():
        candidate = beside.parent / candidate
    if candidate.is_file():
        return candidate, ref
    preset = PRESETS_DIR / f"{ref.removesuffix('.yaml')}.yaml"
    if "/" not in ref and preset.is_file():
        return preset, f"preset {preset.stem}"
    presets = ", ".join(sorted(p.stem for p in PRESETS_DIR.glob("*.yaml")))
    raise source.error(("extends",), f"no file {candidate} and no preset named {ref!r} (presets: {presets})")


def chain(top: YamlSource, label: str) -> list[Link]:
    """The file and the ones it extends, the named file first; cycles and over-long chains refused."""
    links = [Link(top, top.validate(PolicyFile), label)]
    seen = {_identity(top.path): label}
    while (ref := links[-1].model.extends) is not None:
        here = links[-1].source
        path, name = locate(ref, here.path, here)
        key = _identity(path)
        if key in seen:
            loop = " → ".join([*(link.label for link in links), name])
            raise here.error(("extends",), f"extends makes a cycle: {loop}")
        if len(links) >= MAX_CHAIN:
            raise here.error(("extends",), f"a policy may extend at most {MAX_CHAIN - 1} others in a chain")
        seen[key] = name
        source = YamlSource.read(path)
        links.append(Link(source, source.validate(PolicyFile), name))
    return links


def _identity(path: Path) -> str:
    try:
        return str(path.resolve())
    except OSError:
        return str(path)


def merge(parent: PolicyFile, child: PolicyFile) -> PolicyFile:
    """`child` over `parent` (see the module's docstring); the result extends nothing."""
    commands = {
        key: _unique([*getattr(parent.commands, key), *getattr(child.commands, key)])
        for key in ("allow", "ask", "deny", "readonly")
    }
    gates: dict[GateKind, Any] = {}
    kinds: list[GateKind] = [*parent.gates, *(k for k in child.gates if k not in parent.gates)]
    for kind in kinds:
        mine, theirs = child.gates.get(kind), parent.gates.get(kind)
        if mine is None or theirs is None:
            gates[kind] = (mine or theirs).model_dump()  # type: ignore[union-attr]
            continue
        settings = {k: getattr(mine if k in mine.model_fields_set else theirs, k) for k in type(mine).model_fields}
        gates[kind] = {**settings, "rules": ordered(mine.rules, theirs.rules)}
    budgets = {
        k: getattr(child.budgets if k in child.budgets.model_fields_set else parent.budgets, k)
        for k in type(child.budgets).model_fields
    }
    data = {
        "version": 1,
        "name": child.name,
        "description": child.description if "description" in child.model_fields_set else parent.description,
        "commands": commands,
        "gates": gates,
        "budgets": budgets,
        "brain": child.brain if "brain" in child.model_fields_set else parent.brain,
        "notify": [*parent.notify, *child.notify],
        "tests": child.tests,
    }
    return PolicyFile.model_validate(_plain(data))


def ordered(mine: list[RuleSpec], theirs: list[RuleSpec]) -> list[RuleSpec]:
    """One gate's rules, child over parent: the child's `before_guards` rules, the parent's rules up to its last
    guard, the child's other rules, the parent's rest (the rules of each file keep their own order)."""
    last_guard = max((i for i, r in enumerate(theirs) if r.guard), default=-1)
    first = [r for r in mine if r.before_guards]
    rest = [r for r in mine if not r.before_guards]
    return [*first, *theirs[: last_guard + 1], *rest, *theirs[last_guard + 1 :]]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_unset=False)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in cast(dict[Any, Any], value).items()}
    if isinstance(value, list):
        return [_plain(v) for v in cast(list[Any], value)]
    return value


def resolved_text(merged: PolicyFile, links: list[Link]) -> str:
    """The merged policy as a YAML document that loads to the same policy, headed by the files it came from."""
    data = merged.model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    data.pop("extends", None)
    body = yaml.safe_dump({"version": 1, **data}, sort_keys=False, allow_unicode=True, width=120)
    head = [f"# The policy {merged.name!r} resolved from {len(links)} files (extends); sessions run under this text."]
    head += [f"#   {link.label}: {link.model.name}, sha256 {link.sha256}" for link in links]
    text = "\n".join(head) + "\n" + body
    again = YamlSource(links[0].source.path, text).validate(PolicyFile)
    if again.model_dump() != merged.model_dump():  # else the journal would lie about the policy
        raise SourceError(links[0].source.path, None, "the resolved policy does not load back the same; a bug")
    return text
