"""The attack reviews of the clause reader (tests/security/oneliner_attack_lines.py): 1,568 lines aimed at turning a
one-liner into a wrong action — a remark that hides an exclusion, a negation in an odd place, emoji, look-alike
letters, take-backs, sets, conditions, suggestions that drop what mattered — 167 from the sixth round's attack on
statements beside a go-ahead and on rewrites that crossed a clause (group V), and 269 from the seventh round's on
passives, "wrong …", commands named by what they act on, report tails and hosts left out (group W). None may be read
as a wrong action, crash, or be refused with a suggestion that would be one."""

from __future__ import annotations

from tests.security.oneliner_attack_lines import LINES, findings


def test_no_attack_line_is_read_as_a_wrong_action_or_suggests_one() -> None:
    assert len(LINES) >= 1_700
    found = findings()
    assert not found, "\n".join(f"{mech}:\n  " + "\n  ".join(lines) for mech, lines in found.items())
