"""ClaudeBrain: the same four answers as `RuleBrain`, reasoned by a model through the Anthropic API.

Every output is a forced tool call whose input schema is a pydantic model (`schemas.py`), checked
again in code — citations must name calls the subagent really made, a rationale may only quote
numbers that are in the evidence, a decision's condition must compile against the gate's facts.
Invalid input gets one repair round; a second failure, an API that stays down, a missing key or
a spent budget make that one step fall back to `RuleBrain`, and the journal says so.

What the model can never do: change a measured number or a verdict derived from one, run a
command outside the policy (the policy lives in `Toolbox`, not in the prompt), or make a
decision take effect without the person confirming it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent.brain.checks import NUMBER, numbers_in, prompt_pct, quoted, slim_evidence
from agent.brain.claude_investigate import ClaudeInvestigator
from agent.brain.messages import why
from agent.brain.prompts import DECISION_TOOL, PLAN_TOOL, RATIONALE_TOOL
from agent.brain.schemas import (
    DecisionSubmission,
    PlanSubmission,
    RationaleSubmission,
)
from agent.brain.toolbox import Toolbox
from agent.errors import LLMError
from agent.journal import events as ev
from agent.models import BUILTIN_VARS, TEMPLATE_VAR, Assessment, Campaign, CommandSpec, Finding, Option, Plan
from policies.decisions import DecisionError, NotUnderstood
from policies.expr import Condition, ExprError
from policies.gates import ALLOWED, FACTS, Decision, Gate
from policies.session_rules import kinds_for_condition

# The model is advisory: whatever goes wrong on its path (the API, its output, or a bug of ours in
# handling either) makes that step fall back to the rule brain, journaled — never ends a campaign.
ADVISORY = Exception


class ClaudeBrain(ClaudeInvestigator):
    # ------------------------------------------------------------------ the four answers

    def plan(self, campaign: Campaign, findings: Sequence[Finding]) -> Plan:
        try:
            return self._plan(campaign, findings)
        except ADVISORY as exc:
            self.journal.append(ev.BrainFallbackEvent(step="plan", error=why(exc)), actor="planner")
            return self.fallback.plan(campaign, findings)

    def investigate(self, option: Option, tools: Toolbox) -> Finding:
        prior = self.fallback.investigate(option, tools)  # the engineer's probes always run, and always count
        try:
            return self._investigate(option, tools, prior)
        except ADVISORY as exc:
            self.journal.append(
                ev.BrainFallbackEvent(step="investigate", option=option.id, error=str(exc)), actor=tools.agent
            )
            return prior

    def assess(self, option: Option, evidence: dict[str, Any]) -> Assessment:
        measured = self.fallback.assess(option, evidence)  # verdicts come from the numbers, not from prose
        try:
            words = self._rationale(option, evidence, measured)
        except ADVISORY as exc:
            self.journal.append(
                ev.BrainFallbackEvent(step="assess", option=option.id, error=why(exc)), actor="assessor"
            )
            return measured
        rationale = words.rationale + "".join(f"\n- concern: {c}" for c in words.concerns)
        return measured.model_copy(update={"rationale": rationale, "next_step": words.next_step or None})

    def interpret(self, text: str, gate: Gate) -> Decision:
        try:
            return self.fallback.interpret(text, gate)
        except NotUnderstood as grammar:
            if gate.kind == "brain_unavailable":
                raise  # the gate asking whether the model answers does not wait on the model to read its answer
            try:
                return self._interpret(text, gate, grammar)
            except NotUnderstood:
                raise  # the model read it and found no decision: that is an answer, not a failure
            except ADVISORY as exc:
                self.journal.append(ev.BrainFallbackEvent(step="interpret", error=why(exc)), actor="interpreter")
                raise grammar from None

    # ------------------------------------------------------------------ plan

    def _plan(self, campaign: Campaign, findings: Sequence[Finding]) -> Plan:
        ids = [o.id for o in campaign.options]
        known = "\n".join(
            f"- #{f.option}: {'feasible' if f.feasible else 'NO-GO'}; blockers {f.blockers or '-'}; hazards "
            f"{f.hazards or '-'}; {f.summary}"
            for f in findings
        )
        listed = "\n".join(f"- #{o.id} {o.title}" + (f" ({o.notes})" if o.notes else "") for o in campaign.options)
        ask = (
            "Rank the campaign's options by expected gain toward the goal, risk and cost, using the engineer's "
            f"facts about where the time goes. The options to rank:\n{listed}"
            + (f"\nInvestigation findings so far:\n{known}" if known else "")
            + (
                "\nYou may propose new options (they are shown to a person before anything runs)."
                if not findings
                else ""
            )
        )

        def check(p: PlanSubmission) -> None:
            named = [r.option for r in p.ranking]
            unknown = sorted(set(named) - set(ids))
            missing = sorted(set(ids) - set(named))
            if unknown or missing or len(named) != len(set(named)):
                raise ValueError(f"ranking must name each of {ids} exactly once (unknown {unknown}, missing {missing})")
            known_vars = BUILTIN_VARS | set(campaign.vars) | set(campaign.secrets)
            for i, prop in enumerate(p.proposals):
                if not campaign.targets(prop.on):
                    raise ValueError(f"proposals[{i}].on={prop.on!r} names no host or role")
                for cmd in [*prop.apply, *prop.revert]:
                    unknown = {m.group(1) for m in TEMPLATE_VAR.finditer(cmd)} - known_vars
                    if unknown:
                        raise ValueError(f"proposals[{i}]: unknown variable(s) {sorted(unknown)} in {cmd!r}")
            if findings and p.proposals:
                raise ValueError("proposals belong to the first plan; rank only the existing options now")

        sub = self._forced(
            "plan", "planner", None, [{"role": "user", "content": ask}], PLAN_TOOL, PlanSubmission, check
        )
        infeasible = {f.option for f in findings if not f.feasible}
        next_id = max(ids) + 1
        proposals = [
            Option(
                id=next_id + i,
                title=p.title,
                hypothesis=p.hypothesis,
                expected_gain_pct=p.expected_gain_pct,
                risk=p.risk,
                apply=[CommandSpec(run=c, on=p.on) for c in p.apply],
                revert=[CommandSpec(run=c, on=p.on) for c in p.revert],
                notes=f"proposed by {self.name}",
            )
            for i, p in enumerate(sub.proposals)
        ]
        return Plan(
            order=[r.option for r in sub.ranking if r.option not in infeasible] + [p.id for p in proposals],
            rationale={
                **{
                    r.option: f"{r.rationale} (est. {prompt_pct(r.expected_gain_pct)}, risk {r.risk}, cost {r.cost})"
                    for r in sub.ranking
                },
                **{p.id: f"proposed: {p.hypothesis}" for p in proposals},
            },
            proposals=proposals,
        )

    # ------------------------------------------------------------------ assess

    def _rationale(self, option: Option, evidence: dict[str, Any], measured: Assessment) -> RationaleSubmission:
        budget = self.over_budget()
        if budget:
            raise LLMError(f"not calling the model: {budget}")
        facts = {"assessment": measured.model_dump(mode="json"), "evidence": slim_evidence(evidence)}
        ask = (
            f"Option #{option.id} {option.title!r} was applied, benchmarked A/B against the baseline and stress-"
            f"tested. The measured evidence and the verdicts derived from it:\n{json.dumps(facts, indent=1)}\n"
            "Write the rationale for the person deciding whether to keep it, and whether to go on to the next "
            "option. Quote only numbers that appear above."
        )
        allowed = numbers_in(facts)

        def check(r: RationaleSubmission) -> None:
            for text in [r.rationale, r.next_step, *r.concerns]:
                for m in NUMBER.finditer(text):
                    if not quoted(m.group(0), allowed):
                        raise ValueError(f"{m.group(0)!r} is not a number in the evidence; quote the measured values")

        return self._forced(
            "assess",
            "assessor",
            option.id,
            [{"role": "user", "content": ask}],
            RATIONALE_TOOL,
            RationaleSubmission,
            check,
        )

    # ------------------------------------------------------------------ interpret

    def _interpret(self, text: str, gate: Gate, grammar: DecisionError) -> Decision:
        ask = (
            f"A person answered a {gate.kind} gate with one line: {text!r}\n"
            f"The gate asked: {gate.question}\nIts facts: {json.dumps(gate.facts)}\n"
            f"Answers this gate takes: {', '.join(gate.allowed)}. Options it can name: {gate.options or 'none'}.\n"
            f"Facts a condition may use: {', '.join(FACTS[gate.kind])}.\n"
            "Record what they mean. If it is not a decision about this gate, set understood=false."
        )

        def check(d: DecisionSubmission) -> None:
            if not d.understood:
                return
            if d.action is None:
                raise ValueError("understood decisions need an action")
            if d.condition is None and d.action not in ALLOWED[gate.kind]:
                raise ValueError(f"a {gate.kind} gate takes {', '.join(ALLOWED[gate.kind])}, not {d.action}")
            if d.condition is not None and not kinds_for_condition(d.condition):
                # The policy checker's own test: a condition no gate's facts type-check is refused.
                try:
                    Condition(d.condition, FACTS[gate.kind])
                except ExprError as exc:
                    raise ValueError(f"condition {d.condition!r} does not compile against any gate: {exc}") from None
            unknown = [t for t in d.targets if gate.options and t not in gate.options]
            if unknown:
                raise ValueError(f"targets {unknown} are not options of this gate ({gate.options})")

        sub = self._forced(
            "interpret",
            "interpreter",
            gate.option,
            [{"role": "user", "content": ask}],
            DECISION_TOOL,
            DecisionSubmission,
            check,
        )
        if not sub.understood or sub.action is None:
            raise NotUnderstood(f"{grammar} (the model could not read it as a decision either)")
        return Decision(
            action=sub.action,
            targets=sub.targets,
            condition=sub.condition,
            otherwise=sub.otherwise,
            scope=sub.scope,
            runs=sub.runs,
            rationale=sub.rationale or None,
            raw=text,
            parser=self.name,
            hedged=True,  # a model's reading of free text is a guess until the person confirms it
            confirm=True,
        )


# ---------------------------------------------------------------------- helpers
