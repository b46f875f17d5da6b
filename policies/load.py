"""Loading a policy: parse and validate the file (and the ones it `extends:`), then run its own tests
with the engine.

`schema` is the policy as data, `engine` evaluates it, `extends` merges a chain of files, and this
module, above them, is the only way a policy is loaded: a policy whose self-tests fail never reaches a
session.
"""

from __future__ import annotations

from pathlib import Path

from policies.engine import PolicyEngine
from policies.extends import Link, chain, merge, resolved_text
from policies.gates import check_facts
from policies.schema import PRESETS_DIR, Policy, PolicyFile, PolicyPart, PolicyTest, resolve_policy_path
from policies.yamlsrc import YamlSource


def load_policy(name_or_path: str | Path) -> Policy:
    path = resolve_policy_path(name_or_path)
    label = f"preset {path.stem}" if path.parent == PRESETS_DIR else str(path)
    return _load(YamlSource.read(path), label=label, resolve=True)


def load_policy_text(text: str, path: str = "<policy>", *, resolve: bool = False) -> Policy:
    """Rebuild a policy from journaled text (replay, resume) exactly as it was checked then. A session's
    text is self-contained: `extends:` in it is refused unless `resolve` (a file's text being adopted),
    so a journal never makes this machine read its files."""
    return _load(YamlSource(Path(path), text), label=path, resolve=resolve)


def _load(source: YamlSource, *, label: str, resolve: bool) -> Policy:
    model = source.validate(PolicyFile)
    if model.extends is None:
        policy = Policy(source, model)
        self_test(policy)
        policy.parts = [_part(Link(source, model, label), policy)]
        return policy
    if not resolve:
        raise source.error(("extends",), "a session's policy text is self-contained; it cannot extend another file")
    links = chain(source, label)
    alone = [Policy(link.source, link.model.model_copy(update={"tests": []})) for link in links]
    _unique_rule_ids(links, alone)
    parts = [_part(link, part) for link, part in zip(links, alone, strict=True)]
    # Resolved from the root up; each file's tests run against the policy as resolved up to that file.
    merged = links[-1].model
    self_test(alone[-1], merged.tests, links[-1].source)
    policy = alone[-1]
    for i in range(len(links) - 2, -1, -1):
        merged = merge(merged, links[i].model)
        policy = Policy(YamlSource(links[i].source.path, resolved_text(merged, links[i:])), merged)
        self_test(policy, links[i].model.tests, links[i].source)
    origin = {rule.spec.id: rule for part in alone for rules in part.rules.values() for rule in rules}
    for rules in policy.rules.values():
        for rule in rules:
            rule.file, rule.line = origin[rule.spec.id].file, origin[rule.spec.id].line
    policy.parts = parts
    return policy


def _part(link: Link, alone: Policy) -> PolicyPart:
    for rules in alone.rules.values():
        for rule in rules:
            rule.file = str(link.source.path)
    ids = [rule.spec.id for rules in alone.rules.values() for rule in rules]
    return PolicyPart(name=link.model.name, path=link.label, sha256=link.sha256, rules=ids, tests=len(link.model.tests))


def _unique_rule_ids(links: list[Link], alone: list[Policy]) -> None:
    """Decisions cite rule ids: one id means one rule across the whole chain."""
    seen: dict[str, str] = {}
    for link, policy in reversed(list(zip(links, alone, strict=True))):
        for kind, rules in policy.rules.items():
            for i, rule in enumerate(rules):
                if rule.spec.id in seen:
                    raise link.source.error(
                        ("gates", kind, "rules", i, "id"),
                        f"rule id {rule.spec.id!r} is already {seen[rule.spec.id]}; decisions cite rule ids, "
                        "so a policy that extends another gives its rules ids of their own",
                    )
                seen[rule.spec.id] = f"a rule of {link.label} (line {rule.line})"


def self_test(policy: Policy, tests: list[PolicyTest] | None = None, source: YamlSource | None = None) -> None:
    """Run the policy file's own `tests:` (or `tests` written in `source`, for a file of a chain); a test
    that fails is an error at its file:line."""
    engine = PolicyEngine(policy)
    where = source or policy.source
    for i, test in enumerate(policy.model.tests if tests is None else tests):
        loc = ("tests", i)
        try:
            check_facts(test.gate, test.facts)
        except ValueError as exc:
            raise where.error((*loc, "facts"), str(exc)) from None
        got = engine.evaluate(test.gate, test.facts)
        want_rule = test.expect.get("rule")
        if got.action != test.expect["decide"] or (want_rule is not None and got.rule != want_rule):
            raise where.error(
                loc,
                f"test expects {test.expect['decide']}"
                + (f" by rule {want_rule}" if want_rule else "")
                + f", but the policy decides {got.action} by {got.rule or 'no rule'}"
                + (
                    " (with the rules of the policies it extends: their guards before its own, the rest after)"
                    if source is not None
                    else ""
                ),
            )
