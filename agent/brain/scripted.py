"""`ScriptedBrain`: the stand-in for the `Brain` seam (as pydantic-ai ships `FunctionModel` beside its
models), for tests that need the reasoning to say something particular without a model behind it.

Unscripted, every method is the fallback's — `RuleBrain` unless another brain is given: deterministic and
offline. Each method can be scripted instead, by a keyword of the constructor named after it:

- a fixed answer: every call returns it (a `Finding` or `Assessment` is re-addressed to the option asked
  about; a `Decision` carries the text it answers as `raw` unless it names its own);
- a function with the method's own signature;
- a mapping, for the per-option and per-gate methods: `investigate` and `assess` by option id, `interpret`
  by gate id ("g3") or gate kind ("safety"), the id first. A key it lacks falls through to the fallback.

    ScriptedBrain(interpret={"g3": Decision(action="skip")}, assess={2: unsafe_assessment})

Every call is recorded, in order, in `.calls`, with whether the script or the fallback answered.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from agent.brain import Brain, GivenUp
from agent.brain.rules import RuleBrain
from agent.models import Assessment, Campaign, Finding, Option, Plan
from policies.gates import Decision, Gate

if TYPE_CHECKING:
    from agent.brain.toolbox import Toolbox

Method = Literal["plan", "investigate", "assess", "interpret"]

PlanScript = Plan | Callable[[Campaign, Sequence[Finding]], Plan]
InvestigateScript = Finding | Mapping[int, Finding] | Callable[[Option, "Toolbox"], Finding]
AssessScript = Assessment | Mapping[int, Assessment] | Callable[[Option, dict[str, Any]], Assessment]
InterpretScript = Decision | Mapping[str, Decision] | Callable[[str, Gate], Decision]

T = TypeVar("T")


@dataclass(frozen=True)
class BrainCall:
    method: Method
    args: tuple[Any, ...]
    result: Any
    scripted: bool  # False: the fallback brain answered


class ScriptedBrain:
    """A `Brain` answering from scripts, else from `fallback`: see the module docstring."""

    def __init__(
        self,
        *,
        plan: PlanScript | None = None,
        investigate: InvestigateScript | None = None,
        assess: AssessScript | None = None,
        interpret: InterpretScript | None = None,
        fallback: Brain | None = None,
        name: str = "scripted",
    ) -> None:
        self.name = name
        self.fallback: Brain = fallback or RuleBrain()
        self.scripts: dict[Method, Any] = {
            "plan": plan,
            "investigate": investigate,
            "assess": assess,
            "interpret": interpret,
        }
        self.calls: list[BrainCall] = []
        self._lock = threading.Lock()  # investigation subagents call from their own threads

    def plan(self, campaign: Campaign, findings: Sequence[Finding]) -> Plan:
        plan, scripted = self._pick("plan", (campaign, findings), (), self.fallback.plan)
        return self._record("plan", (campaign, findings), plan, scripted)

    def investigate(self, option: Option, tools: Toolbox) -> Finding:
        found, scripted = self._pick("investigate", (option, tools), (option.id,), self.fallback.investigate)
        if found.option != option.id:
            found = found.model_copy(update={"option": option.id})
        return self._record("investigate", (option, tools), found, scripted)

    def assess(self, option: Option, evidence: dict[str, Any]) -> Assessment:
        said, scripted = self._pick("assess", (option, evidence), (option.id,), self.fallback.assess)
        if said.option != option.id:
            said = said.model_copy(update={"option": option.id})
        return self._record("assess", (option, evidence), said, scripted)

    def interpret(self, text: str, gate: Gate) -> Decision:
        decision, scripted = self._pick("interpret", (text, gate), (gate.id, gate.kind), self.fallback.interpret)
        if decision.raw is None:
            decision = decision.model_copy(update={"raw": text})
        return self._record("interpret", (text, gate), decision, scripted)

    def unavailable(self) -> GivenUp | None:
        return self.fallback.unavailable()

    def use_model(self, why_not: str | None) -> None:
        self.fallback.use_model(why_not)

    def calls_to(self, method: Method) -> list[BrainCall]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def _pick(
        self, method: Method, args: tuple[Any, ...], keys: tuple[Any, ...], fallback: Callable[..., T]
    ) -> tuple[T, bool]:
        """(the answer, whether the script gave it)."""
        script = self.scripts[method]
        if isinstance(script, Mapping):
            key = next((k for k in keys if k in script), None)
            return (script[key], True) if key is not None else (fallback(*args), False)
        if callable(script):
            return cast(T, script(*args)), True
        if script is not None:
            return script, True
        return fallback(*args), False

    def _record(self, method: Method, args: tuple[Any, ...], result: T, scripted: bool) -> T:
        with self._lock:
            self.calls.append(BrainCall(method=method, args=args, result=result, scripted=scripted))
        return result
