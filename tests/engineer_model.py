"""A scripted "model" for the Messages API server that behaves like a careful engineer would.

It has no knowledge of the demo: it ranks by the gains the campaign states, investigates by
grepping and reading the code on the first host, and concludes from what its tools returned —
a blocker when the campaign's probes found one, a hazard when the code it read says a barrier
is missing — citing the exact command or path:line it used. Its rationale quotes the measured
numbers from the request. Hooks let a test make it misbehave in one specific way.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.messages_api import Reply, all_text, forced_tool, tool_results, tool_use

OPTION_LINE = re.compile(r"^- #(\d+) .*?\(risk (\w+)(?:, engineer expects ([+-]?[\d.]+)%)?\)", re.M)
PROBE_SOURCE = re.compile(r"^- ([\w.-]+): (.+?) → exit", re.M)
WORRYING = re.compile(r"no (?:tp )?barrier|not wired|race|unsafe|deadlock", re.I)


def first_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content)


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in body.get("system", []))


class EngineerModel:
    def __init__(self) -> None:
        self.inject: dict[int, str] = {}  # option → a command the "model" obeys when its output says so
        self.invalid_finding: set[int] = set()  # options whose first submit_finding cites nothing real
        self.always_invalid: set[str] = set()  # forced tools that never get valid input
        self.proposals: list[dict[str, Any]] = []
        self.decisions: dict[str, dict[str, Any]] = {}  # one-liner → record_decision input
        self.invalid_sent: set[Any] = set()

    def __call__(self, body: dict[str, Any]) -> Reply:
        tool = forced_tool(body)
        if tool in self.always_invalid:
            return tool_use(tool, {"nonsense": True})
        if tool == "submit_plan":
            return self.plan(body)
        if tool == "write_rationale":
            return self.rationale(body)
        if tool == "record_decision":
            return self.decision(body)
        m = re.search(r"Investigate option #(\d+)", first_user_text(body))
        if m:
            return self.investigate(body, int(m.group(1)))
        return Reply(content=[{"type": "text", "text": "I do not know what to do."}])

    # -- planner

    def plan(self, body: dict[str, Any]) -> Reply:
        options = [(int(i), float(g) if g else 0.0) for i, _, g in OPTION_LINE.findall(system_text(body))]
        # Once findings are in, an option with a hazard goes behind every option without one.
        hazardous = {int(i) for i, h in re.findall(r"^- #(\d+): .*?hazards (.*?); ", all_text(body), re.M) if h != "-"}
        ranked = sorted(options, key=lambda o: (o[0] in hazardous, -o[1]))
        ranking = [
            {
                "option": i,
                "expected_gain_pct": g,
                "risk": "medium",
                "cost": "low",
                "rationale": f"the campaign expects {g:+g}% toward the goal",
            }
            for i, g in ranked
        ]
        proposals = self.proposals if "may propose" in all_text(body) else []
        return tool_use("submit_plan", {"ranking": ranking, "proposals": proposals})

    # -- investigation subagent

    def investigate(self, body: dict[str, Any], option: int) -> Reply:
        host = re.search(r"^Hosts: ([\w.-]+)", system_text(body), re.M).group(1)  # type: ignore[union-attr]
        results = tool_results(body)
        brief = first_user_text(body)
        if forced_tool(body) == "submit_finding" or len(results) >= 3:
            return self.conclude(body, option, host, results, brief)
        if option in self.inject and any(self.inject[option] in r for r in results):
            # A gullible model doing what text in a tool result told it to.
            return tool_use("run_readonly", {"host": host, "command": self.inject[option]})
        if not results:
            probe = PROBE_SOURCE.search(brief)
            if probe and option in self.inject:
                return tool_use("run_readonly", {"host": probe.group(1), "command": probe.group(2)})
            return tool_use("grep", {"host": host, "pattern": "class |barrier", "path": "src"})
        hits = re.findall(r"^([\w/.-]+\.py):\d+:class (\w+)", results[0], re.M)
        if len(results) == 1 and hits:
            relevant = [path for path, name in hits if _shares_word(brief, name)]
            path = (relevant or [hits[0][0]])[0]
            return tool_use("read_file", {"host": host, "path": path, "start": 1, "end": 40})
        return self.conclude(body, option, host, results, brief)

    def conclude(self, body: dict[str, Any], option: int, host: str, results: list[str], brief: str) -> Reply:
        blockers, hazards = [], []
        if "Blockers they found: none" not in brief:
            probe = PROBE_SOURCE.search(brief)
            said = re.search(r"exit \d+: ([^;\]'\"]+)", brief)  # what the failed probe printed, as the brief quotes it
            if probe:
                blockers.append(
                    {
                        "text": "the campaign's probe says it cannot run here",
                        "source": {"host": probe.group(1), "command": probe.group(2)},
                        "excerpt": said.group(1).strip() if said else "",
                    }
                )
        read = _last_read(body)
        if read:
            for line in read["text"].splitlines():
                m = re.match(r"^(\d+): (.*)$", line)
                if m and WORRYING.search(m.group(2)) and _relevant(brief, read["text"], int(m.group(1))):
                    hazards.append(
                        {
                            "text": f"code comment warns: {m.group(2).strip()[:120]}",
                            "source": {"host": host, "path": read["path"], "line": int(m.group(1))},
                            "excerpt": m.group(2).strip()[:300],
                        }
                    )
        finding: dict[str, Any] = {
            "feasible": not blockers,
            "blockers": blockers,
            "hazards": hazards,
            "confidence": 0.8,
            "summary": f"looked at {len(results)} tool result(s)",
        }
        if option in self.invalid_finding and option not in self.invalid_sent:
            self.invalid_sent.add(option)
            finding["hazards"] = [{"text": "made up", "source": {"host": host, "path": "/nowhere/at/all.py"}}]
        return tool_use("submit_finding", finding)

    # -- assessor

    def rationale(self, body: dict[str, Any]) -> Reply:
        text = first_user_text(body)
        facts = json.loads(text.split("derived from it:\n", 1)[1].split("\nWrite the rationale", 1)[0])
        a = facts["assessment"]
        if a["gain_pct"] is None:
            said = "There is no usable estimate of the effect."
        else:
            said = f"Measured {a['gain_pct']:+.1f}% (95% CI {a['ci'][0]:+.1f}% to {a['ci'][1]:+.1f}%)."
        said += f" Safety verdict {a['verdict']} with {a['wedges']} wedge(s)."
        concerns = [r for r in a["reasons"] if "WEDGE" in r][:1]
        return tool_use(
            "write_rationale",
            {"rationale": said, "next_step": "the next option is independent of this one", "concerns": concerns},
        )

    # -- interpreter

    def decision(self, body: dict[str, Any]) -> Reply:
        m = re.search(r"one line: '(.*?)'\n", first_user_text(body)) or re.search(
            r'one line: "(.*?)"\n', first_user_text(body)
        )
        said = m.group(1) if m else ""
        return tool_use("record_decision", self.decisions.get(said, {"understood": False}))


def _last_read(body: dict[str, Any]) -> dict[str, str] | None:
    """The path and result of the last read_file call in the conversation."""
    path = None
    found = None
    for message in body["messages"]:
        if not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_use" and block["name"] == "read_file":
                path = block["input"]["path"]
            elif block.get("type") == "tool_result" and path is not None:
                content = block["content"]
                found = {"path": path, "text": content if isinstance(content, str) else json.dumps(content)}
                path = None
    return found


def _relevant(brief: str, text: str, line: int) -> bool:
    """A warning counts for an option whose hypothesis shares a word with the class it sits in."""
    classes = [(int(n), name) for n, name in re.findall(r"^(\d+): class (\w+)", text, re.M)]
    owner = next((name for n, name in reversed(classes) if n <= line), "")
    return _shares_word(brief, owner)


def _shares_word(brief: str, class_name: str) -> bool:
    words = re.findall(r"[A-Z][a-z]+", class_name)
    return any(re.search(rf"\b{w.lower()}", brief.lower()) for w in words if len(w) > 3)
