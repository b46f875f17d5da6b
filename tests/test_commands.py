from tools.commands import classify, split_compound

RULES = {"allow": ["*simserve.py *", "cat *"], "ask": ["sudo *"], "deny": ["rm -rf *"]}


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
