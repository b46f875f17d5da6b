"""What the model said, checked against the evidence: numbers it may quote, citations it may make, and the
finding its submission becomes."""

from __future__ import annotations

import re
from typing import Any

from agent.brain.schemas import (
    Cited,
    FindingSubmission,
)
from agent.models import Finding, Option

PERCENT = re.compile(r"([-+−]?\d+(?:\.\d+)?)\s*%")


NUMBER = re.compile(r"(?<![\w.])[-+−]?\d+(?:,\d{3})*(?:\.\d+)?(?![\w.])")


def prompt_pct(value: float | None) -> str:
    """A percentage for the model to read: every digit kept (a report rounds to one decimal)."""
    return "?" if value is None else f"{value:+g}%"


def merge_finding(prior: Finding, sub: FindingSubmission, option: Option) -> Finding:
    """The probes' blockers and hazards stand; the model's are added with their sources."""

    def where(c: Cited) -> str:
        s = c.source
        return f"{s.host}: " + (s.command or f"{s.path}" + (f":{s.line}" if s.line else ""))

    def claim(c: Cited) -> str:  # the claim, where it was read, and the output it rests on
        quoted = f' said "{" ".join(c.excerpt.split())[:200]}"' if c.excerpt else ""
        return f"{c.text} [{where(c)}{quoted}]"

    blockers = [*prior.blockers, *(claim(c) for c in sub.blockers)]
    return Finding(
        option=option.id,
        feasible=not blockers,
        blockers=blockers,
        hazards=[*prior.hazards, *(claim(c) for c in sub.hazards)],
        hazard_probes=prior.hazard_probes,  # the model's own hazards name no probe, so no scenario reproduces them
        # An engineer's failed blocker probe is not something a model can talk its way past.
        confidence=max(prior.confidence, sub.confidence) if prior.blockers else sub.confidence,
        sources=[*prior.sources, *dict.fromkeys(where(c) for c in [*sub.blockers, *sub.hazards])],
        summary=sub.summary,
        model_only=bool(sub.blockers) and not prior.blockers,
    )


def slim_evidence(evidence: dict[str, Any]) -> dict[str, Any]:
    ab = evidence.get("ab") or {}
    return {
        "ab": {k: v for k, v in ab.items() if k not in ("runs", "pairs_detail", "values_a", "values_b")},
        "stress": [
            {k: s.get(k) for k in ("scenario", "run", "outcome", "evidence")} for s in evidence.get("stress", [])
        ],
        "finding": evidence.get("finding"),
    }


def quoted(token: str, allowed: list[float]) -> bool:
    """Whether a number in the model's prose is one of the evidence's numbers. Small counts ("2 of 3
    runs") pass; a sign, when written, must match — "+6%" for a measured −6% is refused."""
    value = float(token.replace("−", "-").replace(",", ""))
    if token[0] not in "+-−" and value.is_integer() and 0 <= value <= 10:
        return True
    signed = token[0] in "+-−"
    for a in allowed:
        target = a if signed else abs(a)
        probe = value if signed else abs(value)
        if abs(probe - target) <= max(0.15, abs(target) * 0.005):
            return True
    return False


def numbers_in(value: Any) -> list[float]:
    out: list[float] = []
    if isinstance(value, bool):
        return out
    if isinstance(value, int | float):
        out.append(float(value))
    elif isinstance(value, str):
        out.extend(float(m.group(1).replace("−", "-")) for m in PERCENT.finditer(value))
        out.extend(float(n) for n in re.findall(r"[-+]?\d+(?:\.\d+)?", value))
    elif isinstance(value, dict):
        for v in value.values():
            out.extend(numbers_in(v))
    elif isinstance(value, list):
        for v in value:
            out.extend(numbers_in(v))
    return out
