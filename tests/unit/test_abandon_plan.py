"""What `signoff abandon` rolls back (agent/nodes/abandon.py `to_roll_back`): read from the journal's view of the hosts
and the run's state, never from an option's id or name."""

from __future__ import annotations

from typing import Any

from agent.nodes.abandon import to_roll_back


def state(**options: dict[str, Any]) -> dict[str, Any]:
    return {"plan": [1, 2, 3, 4], "options": {k.lstrip("o"): v for k, v in options.items()}, "tried": []}


def test_what_is_on_a_host_and_not_kept_is_rolled_back_the_one_in_flight_first_then_newest_first() -> None:
    values = {**state(o1={"outcome": "kept"}, o2={"outcome": "skipped"}, o3={"outcome": "untested"}), "current": 2}
    on = {"gpu-a": {1: "applied", 2: "in doubt", 3: "applied"}, "gpu-b": {4: "applied"}}
    assert to_roll_back(values, on) == [2, 4, 3]  # #1 was kept: it stays


def test_the_option_in_flight_is_rolled_back_even_when_the_journal_shows_it_off() -> None:
    # An A/B reverts it between its arms; no rollback verified that, so the abandon does.
    values = {**state(o2={"outcome": "untested"}), "current": 2, "tried": [2]}
    assert to_roll_back(values, {"gpu-a": {}}) == [2]
    # Not once a rollback verified it, and not before it was ever applied.
    verified = {**values, "options": {"2": {"outcome": "skipped", "rollback": {"verified": True}}}}
    assert to_roll_back(verified, {"gpu-a": {}}) == []
    assert to_roll_back({**values, "tried": []}, {"gpu-a": {}}) == []


def test_nothing_on_any_host_rolls_back_nothing() -> None:
    assert to_roll_back(state(), {}) == []
    assert to_roll_back({}, {"gpu-a": {1: "applied"}}) == [1]  # a state that knows nothing: the journal decides


def test_a_rollback_that_never_verified_is_done_again_also_for_a_kept_options_excepted_hosts() -> None:
    # A person took #2's rollback as it was (the journal shows it reverted); #1 was kept except on gpu-b, where its
    # rollback did not verify; #3 was kept whole.
    values = state(
        o1={"outcome": "kept", "except_hosts": ["gpu-b"], "rollback": {"verified": False}},
        o2={"outcome": "skipped", "rollback": {"verified": False}},
        o3={"outcome": "kept"},
    )
    assert to_roll_back(values, {"gpu-a": {1: "applied", 3: "applied"}}) == [2, 1]
