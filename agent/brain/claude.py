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
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent.brain import GivenUp
from agent.brain.checks import NUMBER, merge_finding, numbers_in, prompt_pct, quoted, slim_evidence
from agent.brain.client import LLMClient
from agent.brain.messages import blocks_of, cache_marked, one_line, said_in, tool_result, why
from agent.brain.prompts import DECISION_TOOL, FINDING_TOOL, PLAN_TOOL, RATIONALE_TOOL, SYSTEM, campaign_brief
from agent.brain.rules import RuleBrain
from agent.brain.schemas import (
    DecisionSubmission,
    FindingSubmission,
    PlanSubmission,
    RationaleSubmission,
)
from agent.brain.toolbox import TOOL_SPECS, Toolbox
from agent.errors import LLMError, StepFailed
from agent.journal import events as ev
from agent.models import BUILTIN_VARS, TEMPLATE_VAR, Assessment, BrainSpec, Campaign, CommandSpec, Finding, Option, Plan
from agent.store.base import JournalWriter
from policies.decisions import DecisionError, NotUnderstood
from policies.expr import Condition, ExprError
from policies.gates import ALLOWED, FACTS, Decision, Gate
from policies.session_rules import kinds_for_condition

T = TypeVar("T", bound=BaseModel)


# The model is advisory: whatever goes wrong on its path (the API, its output, or a bug of ours in
# handling either) makes that step fall back to the rule brain, journaled — never ends a campaign.
ADVISORY = Exception


class ClaudeBrain:
    def __init__(
        self,
        spec: BrainSpec,
        *,
        campaign: Campaign,
        journal: JournalWriter,
        api_key: str,
        auth_token: str = "",
        max_output: int | None = None,
        on_cost: Callable[[float], None] = lambda _: None,
        over_budget: Callable[[], str | None] = lambda: None,
        redact: Callable[[str], str] = str,
        base_url: str | None = None,
    ) -> None:
        self.spec = spec
        self.name = f"claude/{spec.model}"
        self.journal = journal
        self.fallback = RuleBrain()
        self.over_budget = over_budget
        self.redact = redact  # model text is journaled; it may quote secrets it read on a host
        self.llm = LLMClient(
            spec,
            api_key=api_key,
            auth_token=auth_token,
            max_output=max_output,
            journal=journal,
            on_cost=on_cost,
            base_url=base_url,
        )
        self._api_key_set = bool(api_key or auth_token)
        # Tools, then this system prompt, form the prefix every call shares: cached once, read after.
        self.system = [
            {"type": "text", "text": SYSTEM},
            {"type": "text", "text": campaign_brief(campaign), "cache_control": {"type": "ephemeral"}},
        ]

    def unavailable(self) -> GivenUp | None:
        why = self.llm.given_up
        if why is None:
            return None
        refused = self.llm.refused
        failed = 0 if refused else self.llm.failed_in_a_row
        return GivenUp(why=why, cause="refused" if refused else "unanswered", failed_calls=failed)

    def use_model(self, why_not: str | None) -> None:
        self.llm.use_model(why_not)

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

    # ------------------------------------------------------------------ investigate

    def _investigate(self, option: Option, tools: Toolbox, prior: Finding) -> Finding:
        agent = tools.agent
        probes = "\n".join(f"- {s}" for s in prior.sources) or "- (the campaign declares no probes)"
        messages: list[dict[str, Any]] = [
            {
                "role": "user",
                "content": (
                    f"Investigate option #{option.id} {option.title!r}: {option.hypothesis}\n"
                    f"Apply: {'; '.join(c.run for c in option.apply)}\n"
                    f"The campaign's probes already ran:\n{probes}\n"
                    f"Blockers they found: {_capped(prior.blockers) or 'none'}; "
                    f"hazards: {_capped(prior.hazards) or 'none'}\n"
                    "Use the read-only tools to check whether the option can work here and what could go "
                    "wrong (read the code paths it touches), then call submit_finding."
                ),
            }
        ]
        if tools.approved:
            messages[0]["content"] += "\nA person approved these commands for you; run them now: " + "; ".join(
                f"`{c}`" for c in sorted(tools.approved)
            )
        tools_spec = [*TOOL_SPECS, FINDING_TOOL]
        used_tokens, repaired = 0, False
        # One extra turn exists only for repairing an invalid finding given on the last turn.
        for turn in range(1, self.spec.max_turns + 2):
            if turn > self.spec.max_turns and not repaired:
                break
            budget = self.over_budget()
            if budget:
                raise LLMError(f"not calling the model: {budget}")
            last = turn >= self.spec.max_turns or used_tokens >= self.spec.subagent_tokens
            choice = {"type": "tool", "name": "submit_finding"} if last else {"type": "any"}
            message, usage = self.llm.call(
                purpose="investigate",
                actor=agent,
                option=option.id,
                system=self.system,
                messages=cache_marked(messages),
                tools=tools_spec,
                tool_choice=choice,
            )
            used_tokens += sum(
                usage[k] for k in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
            )
            blocks = blocks_of(message)
            if blocks:  # the API refuses an assistant turn with no content in the next request
                messages.append({"role": "assistant", "content": blocks})
            calls = [b for b in blocks if b["type"] == "tool_use"]
            self.journal.append(
                ev.SubagentTurnEvent(
                    option=option.id, turn=turn, tools=[c["name"] for c in calls], said=self.redact(said_in(blocks))
                ),
                actor=agent,
            )
            results = []
            for call in calls:
                if call["name"] == "submit_finding":
                    try:
                        sub = FindingSubmission.model_validate(call["input"])
                        self._check_finding(sub, tools)
                        return self._redacted(merge_finding(prior, sub, option))
                    except (ValidationError, ValueError) as exc:
                        if repaired:
                            raise StepFailed(f"submit_finding invalid twice: {one_line(exc)}") from None
                        repaired = True
                        self.journal.append(
                            ev.LlmInvalidEvent(
                                purpose="investigate", option=option.id, error=self.redact(one_line(exc))
                            ),
                            actor=agent,
                        )
                        results.append(
                            tool_result(call, f"invalid finding: {one_line(exc)}. Fix it and call again.", True)
                        )
                    continue
                text, is_error = tools.dispatch(call["name"], call["input"] if isinstance(call["input"], dict) else {})
                results.append(tool_result(call, text, is_error))
            if not results:
                results = [{"type": "text", "text": "Use a tool, or call submit_finding to conclude."}]
            messages.append({"role": "user", "content": results})
        raise StepFailed(f"no finding after {self.spec.max_turns} turns")

    def _redacted(self, f: Finding) -> Finding:
        r = self.redact
        return f.model_copy(
            update={
                "blockers": [r(b) for b in f.blockers],
                "hazards": [r(h) for h in f.hazards],
                "sources": [r(x) for x in f.sources],
                "summary": r(f.summary),
            }
        )

    @staticmethod
    def _check_finding(sub: FindingSubmission, tools: Toolbox) -> None:
        if sub.feasible == bool(sub.blockers):
            raise ValueError("feasible must be false exactly when there are blockers")
        for kind, items in (("blockers", sub.blockers), ("hazards", sub.hazards)):
            for i, item in enumerate(items):
                s = item.source
                if s.command is None and s.path is None:
                    raise ValueError(f"{kind}[{i}] cites no command or path")
                what = s.command or s.path
                if not tools.cites(s.host, s.command, s.path):
                    raise ValueError(
                        f"{kind}[{i}] cites {what!r} on {s.host}, which this investigation never ran or read"
                    )
                if kind == "blockers" and not (item.excerpt or "").strip():
                    raise ValueError(
                        f"{kind}[{i}] quotes no output: copy the line(s) of {what!r} it rests on into excerpt"
                    )
                if item.excerpt and not tools.cites(s.host, s.command, s.path, item.excerpt):
                    raise ValueError(
                        f"{kind}[{i}] quotes {item.excerpt[:80]!r}, which {what!r} on {s.host} did not print (quote at "
                        "least a dozen characters of its output, exactly)"
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

    # ------------------------------------------------------------------ one forced call, one repair

    def _forced(
        self,
        purpose: str,
        actor: str,
        option: int | None,
        messages: list[dict[str, Any]],
        tool: dict[str, Any],
        model: type[T],
        check: Callable[[T], None],
    ) -> T:
        budget = self.over_budget()
        if budget:
            raise LLMError(f"not calling the model: {budget}")
        messages = list(messages)
        error = ""
        for attempt in (1, 2):
            message, _ = self.llm.call(
                purpose=purpose,
                actor=actor,
                option=option,
                system=self.system,
                messages=messages,
                tools=[tool],
                tool_choice={"type": "tool", "name": tool["name"]},
            )
            blocks = blocks_of(message)
            call = next((b for b in blocks if b["type"] == "tool_use" and b["name"] == tool["name"]), None)
            if call is None:
                error = f"the reply did not call {tool['name']}"
            else:
                try:
                    value = model.model_validate(call["input"])
                    check(value)
                    return value
                except (ValidationError, ValueError) as exc:
                    error = one_line(exc)
            self.journal.append(
                ev.LlmInvalidEvent(purpose=purpose, option=option, attempt=attempt, error=error), actor=actor
            )
            if attempt == 1:
                if blocks:  # the API refuses an assistant turn with no content in the next request
                    messages.append({"role": "assistant", "content": blocks})
                fix = f"That input is invalid: {error}. Call {tool['name']} again with corrected input."
                messages.append(
                    {
                        "role": "user",
                        "content": [tool_result(call, fix, True)] if call else [{"type": "text", "text": fix}],
                    }
                )
        raise StepFailed(f"{purpose}: {tool['name']} input invalid after one repair: {error}")


# ---------------------------------------------------------------------- helpers


def _capped(items: Sequence[str], limit: int = 300) -> list[str]:
    """Probe findings as the first message quotes them: each at most `limit` characters (they hold host output,
    already redacted), so a probe's output cannot fill the prompt."""
    return [item if len(item) <= limit else item[: limit - 1] + "…" for item in items]
