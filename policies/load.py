"""Loading a policy: parse and validate the file, then run its own tests with the engine.

`schema` is the policy as data, `engine` evaluates it, and this module, above both, is the only way a
policy is loaded: a policy whose self-tests fail never reaches a session.
"""

from __future__ import annotations

from pathlib import Path

from policies.engine import PolicyEngine
from policies.gates import check_facts
from policies.schema import Policy, PolicyFile, resolve_policy_path
from policies.yamlsrc import YamlSource


def load_policy(name_or_path: str | Path) -> Policy:
    source = YamlSource.read(resolve_policy_path(name_or_path))
    policy = Policy(source, source.validate(PolicyFile))
    self_test(policy)
    return policy


def load_policy_text(text: str, path: str = "<policy>") -> Policy:
    """Rebuild a policy from journaled text (replay, resume) exactly as it was checked then."""
    source = YamlSource(Path(path), text)
    policy = Policy(source, source.validate(PolicyFile))
    self_test(policy)
    return policy


def self_test(policy: Policy) -> None:
    """Run the policy file's own `tests:`; a test that fails is an error at its file:line."""
    engine = PolicyEngine(policy)
    for i, test in enumerate(policy.model.tests):
        loc = ("tests", i)
        try:
            check_facts(test.gate, test.facts)
        except ValueError as exc:
            raise policy.source.error((*loc, "facts"), str(exc)) from None
        got = engine.evaluate(test.gate, test.facts)
        want_rule = test.expect.get("rule")
        if got.action != test.expect["decide"] or (want_rule is not None and got.rule != want_rule):
            raise policy.source.error(
                loc,
                f"test expects {test.expect['decide']}"
                + (f" by rule {want_rule}" if want_rule else "")
                + f", but the policy decides {got.action} by {got.rule or 'no rule'}",
            )
