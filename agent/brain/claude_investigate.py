"""ClaudeBrain's investigation: a subagent's tool loop over the `Toolbox`, and its finding checked against the calls
it really made."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from agent.brain.checks import merge_finding
from agent.brain.claude_calls import ClaudeCalls
from agent.brain.messages import blocks_of, cache_marked, one_line, said_in, tool_result
from agent.brain.prompts import FINDING_TOOL
from agent.brain.schemas import (
    FindingSubmission,
)
from agent.brain.toolbox import TOOL_SPECS, Toolbox
from agent.errors import LLMError, StepFailed
from agent.journal import events as ev
from agent.models import Finding, Option


class ClaudeInvestigator(ClaudeCalls):
    """An option investigated by the model with the host's read-only tools."""

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
                    f"Blockers they found: {capped(prior.blockers) or 'none'}; "
                    f"hazards: {capped(prior.hazards) or 'none'}\n"
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


def capped(items: Sequence[str], limit: int = 300) -> list[str]:
    """Probe findings as the first message quotes them: each at most `limit` characters (they hold host output,
    already redacted), so a probe's output cannot fill the prompt."""
    return [item if len(item) <= limit else item[: limit - 1] + "…" for item in items]
