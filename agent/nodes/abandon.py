"""Give a session up (`signoff abandon`): every option the journal shows on a host that was not kept is rolled back
and verified, newest first, through the rollback node (a rollback that does not verify opens the rollback gate, as
anywhere else); nothing further is tried, and the run ends without measuring the goal. Kept options stay: they are
the known-good baseline the campaign built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Command

from agent.context import RunContext
from agent.state import Abandoning, OptionEntry, State

# What the journal can say an option is on a host (agent/journal/view.py `on_hosts`): a clean apply, or an apply or
# revert a crash or a failure left unsettled. Either is rolled back.
ON = ("applied", "in doubt")


def to_roll_back(values: Mapping[str, Any], on_hosts: Mapping[str, Mapping[int, str]]) -> list[int]:
    """The options to roll back, in order: those the journal shows on some host that the run has not kept, and the
    one in flight even when the journal shows it off (an A/B leaves it reverted between its arms, and no rollback
    has verified that), the one in flight first, then the rest newest first (the reverse of the plan)."""
    options = values.get("options") or {}
    on = {o for states in on_hosts.values() for o, state in states.items() if state in ON}
    # A rollback a person took as it was (it did not verify): the journal shows it reverted, but it may not be. A kept
    # option's is its rollback on the hosts it was not kept on, which the rollback node does again there alone.
    on |= {int(k) for k, o in options.items() if (o.get("rollback") or {}).get("verified") is False}
    current = values.get("current")
    if isinstance(current, int) and current in (values.get("tried") or []):
        mine = options.get(str(current)) or {}
        if not (mine.get("rollback") or {}).get("verified"):
            on.add(current)
    left = [o for o in on if _undone_if_kept(options.get(str(o)) or {})]
    plan = [int(o) for o in values.get("plan") or []]

    def order(o: int) -> tuple[int, int]:
        return (0 if o == current else 1, -plan.index(o) if o in plan else 0)

    return sorted(left, key=order)


def _undone_if_kept(option: Mapping[str, Any]) -> bool:
    """Whether an option on a host is the abandon's to roll back: any not kept, and a kept one whose rollback on the
    hosts it was not kept on did not verify."""
    if option.get("outcome") != "kept":
        return True
    return bool(option.get("except_hosts")) and (option.get("rollback") or {}).get("verified") is False


def abandon(state: State, runtime: Runtime[RunContext]) -> Command[Literal["rollback", "confirm"]]:
    """Route the run to the next rollback its abandon asked for, or to the end once none is left."""
    asked: Abandoning = {**(state.get("abandon") or Abandoning())}
    first = "done" not in asked
    done = [int(o) for o in asked.get("done") or []]
    left = _left(asked)
    why = f"abandoned by {asked.get('by') or 'a person'}"
    options = state.get("options") or {}
    untried: dict[str, OptionEntry] = {
        key: {"reasons": [*o.get("reasons", []), f"not tried: {why}"]}
        for key, o in options.items()
        if o.get("outcome") == "untested" and int(key) not in left and not any(why in r for r in o.get("reasons", []))
    }
    ending: State = {"queue": [], "stopping": True, "command_scope": None, "options": untried}
    closed = asked.get("gate")
    if first and isinstance(closed, dict):
        # The gate the abandon closed unanswered is part of the record (its id is not given to another gate).
        ending["gates"] = [{**closed, "decision": {"action": "abandoned", "by": asked.get("by")}}]
    if not left:
        return Command(goto="confirm", update={**ending, "abandon": {**asked, "done": done}})
    option = left[0]
    key = str(option)
    had = options.get(key) or {}
    mine: OptionEntry = {"reasons": [*had.get("reasons", []), f"{why}: rolled back"]}
    if had.get("outcome") in (None, "untested"):
        mine["outcome"] = "skipped"
    return Command(
        goto="rollback",
        update={
            **ending,
            "current": option,
            "abandon": {**asked, "done": [*done, option]},
            "options": {**untried, key: mine},
            "verification": None,
        },
    )


def abandoning(state: State) -> bool:
    """Whether an abandon still has options to roll back after the one in hand."""
    return bool(_left(state.get("abandon") or Abandoning()))


def _left(asked: Abandoning) -> list[int]:
    """The options an abandon asked to roll back that it has not handed to the rollback node yet, in its order."""
    done = {int(o) for o in asked.get("done") or []}
    return [int(o) for o in asked.get("roll_back") or [] if int(o) not in done]
