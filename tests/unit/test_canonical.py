"""The canonical form (tools/canonical/): what a host's bash is given for a command the policy allowed.

It reads as the command itself wherever that was already plain, means to bash what the parse tree means (checked
here against bash's own trace, not against the renderer's idea of it), is its own canonical form, and refuses —
never guesses — where it cannot write a construct back faithfully.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shellfuzz import Scratch, corpus, run_traced
from tools.canonical import canonical
from tools.transport import SHELL

# Campaign commands as people write them: their canonical form is the command, byte for byte.
UNCHANGED = [
    "/work/.venv/bin/python simserve.py bench --concurrency 90 --num-prompts 900 --wall 0.2",
    "sh redisctl.sh crash 50",
    "redis-benchmark -s ./redis.sock -t set -n 6000 -c 50 -r 100000 -q",
    'psql -h "$PGHOST" -c "ALTER SYSTEM SET shared_buffers = \'1GB\'" && sh pgctl.sh restart',
    "nvidia-smi -q -d MEMORY | grep -n Used",
    "test -f broken && echo 'RuntimeError: CUDA error' || python3 simserve.py bench --wall 0.01",
    "cat out.json 2>/dev/null >>log 2>&1",
    "tail -n 5 $(cat log.name) || true",
    "for i in 1 2 3; do echo $i; done",
    "if test -f x; then echo y; else echo n; fi",
    'x=1 y="$HOME" env',
    'echo "${PGPORT:-5432}"',
    "( cd sub && make ) &",
    "! grep -q error log",
    "time sleep 0",
    'printf "%s\\n" a b',
]

# What reads differently written back, and what it becomes.
REWRITTEN = {
    "echo hi # a comment": "echo hi",
    "echo `date`": "echo $(date)",
    "echo $( (date) )": "echo $( ( date ) )",
    "echo $'a\\nb'": "echo 'a\nb'",
    "f() { echo f; }; f": "f () { echo f; }; f",
    "cat <<EOF\nhello $USER\nEOF\n": 'cat <<< "hello $USER"',
    "cat <<'EOF'\n$not expanded\nEOF\n": "cat <<< '$not expanded'",
    "cat <<EOF\nEOF\n": "cat </dev/null",
    "python3 -m x \\\n  --model m \\\n  --tp 8": "python3 -m x --model m --tp 8",
    # the grammar reads a comment where bash would read an escaped blank: what runs is the grammar's reading
    "true \\ #; rm -rf ~": "true",
    'echo "x"\\ #; rm -rf /': 'echo "x"',
    "echo $'\\'; rm -rf ~/x; #'": "echo ''\"'\"'; rm -rf ~/x; #'",
    "'if' x": "'if' x",
    "\\rm -r x": "rm -r x",
}

REFUSED = {
    "echo $((x+1))": "arithmetic",
    "echo ${x/a/b}": "parameter expansion",
    "echo {a,b}": "brace expansion",
    "[[ $x =~ a.b ]]": "'=~'",
    "echo `echo \\$x`": "backquoted",
    "cat <<-EOF\n\t$x\n\tEOF\n": "indented here-document",
    "cat 3<<EOF\nx\nEOF\n": "here-document",
    "echo $1x": "expansion",
    "echo (": "does not parse",
    "a[1]=x": "subscript",
    "for ((i=0; i<3; i++)); do :; done": "only run as written",
    "echo " + "$(" * 70 + "x" + ")" * 70: "nested too deeply",
    "echo " + "a" * 3000 + "; " + "b" * 20000: "without a `;`",
}


@pytest.mark.parametrize("command", UNCHANGED)
def test_a_plain_command_is_its_own_canonical_form(command: str) -> None:
    assert canonical(command).text == command


@pytest.mark.parametrize(("command", "written"), REWRITTEN.items(), ids=list(range(len(REWRITTEN))))
def test_what_reads_differently_is_written_back(command: str, written: str) -> None:
    assert canonical(command).text == written


@pytest.mark.parametrize(("command", "why"), REFUSED.items(), ids=list(REFUSED.values()))
def test_what_cannot_be_written_back_faithfully_is_refused_with_why(command: str, why: str) -> None:
    form = canonical(command)
    assert form.text is None and why in form.why, form


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Scratch:
    return Scratch(tmp_path_factory.mktemp("canonical"))


# Commands whose every piece the grammar reads as bash does: original and canonical form must run the same
# commands with the same words (bash's own trace), in a scratch directory with only harmless programs.
SAME_IN_BASH = [
    'a=1 b="$x" echo $a "$b" ${x} "${x}y" $xy',
    'echo *; echo "*" ?EADME [RQ]EADME x[',
    "echo ~ ~/x '~' a~ ~+",
    "if true; then echo a; elif false; then echo b; else echo c; fi",
    'for i in 1 "2 3" $x; do echo $i; done; for i; do echo $i; done',
    "while false; do :; done; until true; do :; done",
    "case a in a|b) echo A;; *) echo B;; esac; case $x in [ab]*) echo yes;; esac",
    "f() { echo f; }; f; function g { echo g; }; g",
    "echo a && echo b || echo c; ! false",
    "( echo s ); { echo g; }; echo x | cat | cat",
    'echo $(echo in) "$(echo q)" `echo bt`',  # (a `<(…)` runs asynchronously: its trace may come after bash's end)
    'cat <<EOF\nhello $x "q" \\$y \\\\ $(echo n)\nEOF\n',
    "cat <<'EOF' | cat\nlit $x\nEOF\necho after",
    "echo x > o; cat < o 2>/dev/null >> o2 2>&1; cat o2 >&2",
    'export A=1 B="$x"; unset A; echo $B; y=(a b "c d"); echo $y',
    "echo ${#x} ${x%b} ${x:-d} ${u:-d} ${x#a} $((1+2)) {1..3} $# $?",
    "[ -f README ] && [[ $x == a* ]] && echo yes",
    "echo \"a\\\"b\\\\c\\$d\" $\"t\" 'it'\\''s' $'\\t\\x41\\047'",
    "echo a#b # c\necho d",
    'printf "%s\\n" a\\ b a\\;b a\\|b',
]


@pytest.mark.parametrize("command", SAME_IN_BASH, ids=list(range(len(SAME_IN_BASH))))
def test_bash_runs_the_same_commands_either_way(scratch: Scratch, command: str) -> None:
    form = canonical(command)
    assert form.text is not None, form
    original = run_traced(scratch, list(SHELL), command)
    rewritten = run_traced(scratch, list(SHELL), form.text)
    assert sorted(map(tuple, rewritten.traced)) == sorted(map(tuple, original.traced))  # `&` may reorder
    assert rewritten.code == original.code


def test_every_canonical_form_is_its_own_and_nothing_raises(tmp_path: Path) -> None:
    """Generated text of every kind (tests/shellfuzz.py), and bytes that are not shell at all."""
    seen = written = 0
    texts = [*corpus(11, 3000), "\x00", "'", '"', "\\", "$", "`", "${", "$(", "<<", "\n" * 50, "é\u2028\ufffd"]
    for text in texts:
        form = canonical(text)
        seen += 1
        if form.text is not None:
            written += 1
            assert canonical(form.text).text == form.text, text
        else:
            assert form.why, text
    assert written > seen // 5, f"only {written} of {seen} written back"
