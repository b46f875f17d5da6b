"""The second attack review of the tree-sitter command classifier (issue 19, H1). Each case was proved
against bash first: it created `./M` (a hidden `touch M`), deleted a victim directory that a deny pattern
protects, or wrote outside the working directory, while the classifier said otherwise. Where bash
and tree-sitter-bash read text differently, what the classifier cannot be sure of is asked about; what
may run a denied command is denied or, when only an expansion could make it one, asked about."""

from __future__ import annotations

from pathlib import Path

import pytest

from policies.load import load_policy
from tests.security.test_command_policy_bypass import bash, cautious
from tools.commands import classify

PERMISSIVE = {"allow": ["*"], "ask": []}


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A directory that deny patterns protect: `rm -rf VICTIM*` in each test's own deny list."""
    path = tmp_path / "victim"
    path.mkdir()
    return path


# -- bash runs a hidden `touch M` (or writes outside) where the classifier saw only allowed commands

HIDDEN = {
    "cr-comment": "echo hi\r#; touch M",
    "vt-comment": "echo hi;\x0b# ; touch M",
    "continuation-comment": "echo a\\\n#;touch M",
    "continuation-crlf": "echo \\\r\ntouch M",
    "continuation-line-start": "echo\n\\\ntouch M",
    "herestring-dollar-newline": "echo <<<$\ntouch M",
    "brace-bracket-comment": "echo { [#;touch M",
    "brace-tab-bracket-comment": "echo {\t[#;touch M",
    "heredoc-quoted-delimiter": 'cat <<E"O"F\nx\nEOF\ntouch M\nE"O"F\n',
    "heredoc-empty-quotes": "cat <<EOF''\nx\nEOF\ntouch M\nEOF''\n",
    "heredoc-ansi-delimiter": "cat <<$'EOF'\nx\nEOF\ntouch M\n$'EOF'\n",
    "heredoc-continued-delimiter": "cat <<EOF\nx\nEO\\\nF\ntouch M\nEOF\n",
    "ansi-nul": "$'touch\\0python' $'M\\0simserve.py'",
    "ansi-nul-hex-ctrl": "$'touch\\x00python' $'M\\c@simserve.py'",
    "assignments-as-words": "A=python B=simserve.py touch M",
    "star-crosses-slash": "/usr/lib/python3/../../bin/touch simserve.py M",
}


@pytest.mark.parametrize("command", HIDDEN.values(), ids=HIDDEN.keys())
def test_text_bash_reads_differently_is_never_allowed(command: str, tmp_path: Path) -> None:
    bash(command, tmp_path)
    assert (tmp_path / "M").exists(), f"not an attack: bash did not run the hidden command: {command!r}"
    assert cautious(command).klass != "allow", (command, cautious(command))


@pytest.mark.parametrize("fd", ["1</OUT >/dev/stdout", "3</OUT >/dev/fd/3", "2</OUT >/dev/stderr"])
def test_dev_fd_targets_reopen_a_file_read_from_outside(fd: str, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.write_text("intact")
    work = tmp_path / "work"
    work.mkdir()
    command = f"echo pwned {fd.replace('OUT', str(outside))}"
    bash(command, work)
    assert outside.read_text() != "intact", "not an attack: the file outside was not written"
    assert cautious(command).klass == "ask" and "outside" in cautious(command).reason


# -- a denied command runs; the deny pattern protects VICTIM

DENIED = {
    "ansi-nul": "$'rm\\0python' $'-rf\\0simserve.py' VICTIM",
    "cr-comment": "echo hi\r#; rm -rf VICTIM",
    "herestring-dollar-newline": "echo <<<$\nrm -rf VICTIM",
    "heredoc-quoted-delimiter": 'cat <<E"O"F\nEOF\nrm -rf VICTIM\nE"O"F\n',
    "extra-flag": "rm -rfv VICTIM",
    "second-operand": "rm -rf x VICTIM",
    "long-and-short": "rm --force -r VICTIM",
    "bash-c-dashdash": "bash -c -- 'rm -rf VICTIM'",
    "script-c": "script -qc 'rm -rf VICTIM' /dev/null",
    "unshare": "unshare rm -rf VICTIM",
}


@pytest.mark.parametrize("command", DENIED.values(), ids=DENIED.keys())
def test_a_denied_command_is_denied_whatever_surrounds_it(command: str, tmp_path: Path, victim: Path) -> None:
    command = command.replace("VICTIM", str(victim))
    deny = [f"rm -rf {victim}*"]
    if "script" not in command:  # script(1) needs a terminal to run its command here
        bash(command, tmp_path)
        assert not victim.exists(), f"not an attack: bash did not delete the victim: {command!r}"
    for allow in (["*"], load_policy("cautious").model.commands.allow):
        v = classify(command, allow=allow, ask=[], deny=deny)
        assert v.klass == "deny", (command, v)


# A denied command that only an expansion, stdin, a changed directory or a string bash evaluates later
# could make one: the classifier cannot know, so it asks, even when every command is allowed.
MAYBE_DENIED = {
    "expanded-operand": "d=VICTIM; rm -rf $d",
    "substituted-operand": 'rm -rf "$(echo VICTIM)"',
    "relative-after-cd": "cd VICTIM/.. && rm -rf victim",
    "trap": "trap 'rm -rf VICTIM' EXIT",
    "alias": "shopt -s expand_aliases\nalias r='rm -rf'\nr VICTIM",
    "source-substitution": "source <(echo 'rm -rf VICTIM')",
    "source-stdin": ". /dev/stdin <<< 'rm -rf VICTIM'",
    "bash-herestring": "bash <<< 'rm -rf VICTIM'",
    "bash-stdin": "echo 'rm -rf VICTIM' | bash",
    "bash-c-dollar0": "bash -c 'rm -rf \"$0\"' VICTIM",
    "env-S": "env -S'rm -rf VICTIM'",
    "env-split-string": "env --split-string='rm -rf VICTIM'",
    "xargs": "echo VICTIM | xargs rm -rf",
    "find-exec-plus": "find VICTIM/.. -maxdepth 1 -name victim -exec rm -rf {} +",
    "hash-p": "hash -p /bin/rm ls; ls -rf VICTIM",
    "function-shadows": 'ls() { rm "$@"; }; ls -rf VICTIM',
    "mapfile-C": "mapfile -C 'rm -rf VICTIM #' -c 1 a <<< x",
    "declare-i": "declare -i n; n='x[$(rm -rf VICTIM)]'",
    "declare-n": "declare -n r; r='a[$(rm -rf VICTIM)]'; r=1",
    "bash-env": "BASH_ENV=<(echo 'rm -rf VICTIM') bash -c true",
    "ps4": "PS4='$(rm -rf VICTIM)'; set -x; true",
}


@pytest.mark.parametrize("command", MAYBE_DENIED.values(), ids=MAYBE_DENIED.keys())
def test_what_may_become_a_denied_command_is_never_allowed(command: str, tmp_path: Path, victim: Path) -> None:
    command = command.replace("VICTIM", str(victim))
    bash(command, tmp_path)
    assert not victim.exists(), f"not an attack: bash did not delete the victim: {command!r}"
    v = classify(command, allow=["*"], ask=[], deny=[f"rm -rf {victim}*"])
    assert v.klass in ("ask", "deny"), (command, v)


def test_a_script_file_is_judged_by_its_name_and_asked_about_under_cautious(tmp_path: Path) -> None:
    """What a named script file holds is not read: `sh pgctl.sh` is judged by the patterns on its own
    argv (the postgres example's policy allows exactly that). A deny list cannot see inside a file, so
    under a policy that allows everything `. ./s` runs whatever `s` says; cautious asks."""
    command = "echo 'rm -rf /tmp/x' > s; . ./s"
    assert cautious(command).klass == "ask" and cautious(command).part == ". ./s"
    assert classify("sh pgctl.sh init 2", allow=["sh pgctl.sh *"], ask=[], deny=["rm -rf /*"]).klass == "allow"


@pytest.mark.parametrize("command", ["git push -f", "git push origin --force", "git -C . push --force origin"])
def test_git_force_push_is_denied_however_it_is_spelled(command: str) -> None:
    assert cautious(command).klass == "deny", (command, cautious(command))


# -- ordinary campaign commands the classifier itself asked about

FINE = [
    "CUDA_VISIBLE_DEVICES=0 python3 simserve.py bench",
    "echo $((4*1024))",
    "python3 simserve.py bench --n=$((4*1024))",
    "for i in {1..5}; do python3 simserve.py bench --run $i; done",
    "cat <<EOF > config.yaml\nport: ${PORT:-8080}\nEOF",
    "python3 simserve.py bench 2> >(grep -v warn >&2)",
    "python3 simserve.py bench \\\n  --n 4",
]


@pytest.mark.parametrize("command", FINE)
def test_ordinary_campaign_commands_are_allowed(command: str) -> None:
    assert cautious(command).klass == "allow", (command, cautious(command))


SLOW = {"open-arithmetic": "((a" * 10920, "backtick-paren": "`)" * 16380}


@pytest.mark.parametrize("command", SLOW.values(), ids=SLOW.keys())
def test_pathological_error_recovery_stays_bounded(command: str) -> None:
    """Not a speed assertion (bench/commands.py measures that): a verdict that is not allow, reached
    under the suite's per-test timeout."""
    assert classify(command, deny=[], **PERMISSIVE).klass != "allow"


# -- the third review (after the fixes above)


def test_planting_a_module_the_allowed_script_imports_is_asked_about(tmp_path: Path) -> None:
    """Writing into the working directory is allowed, and Python imports from the script's directory
    first: `simserve.py` then runs the planted `_json.py` (the standard library's module it reads JSON with).
    A write of code is asked about."""
    simserve = Path(__file__).resolve().parents[2] / "examples" / "decode-campaign" / "simserve.py"
    (tmp_path / "simserve.py").write_bytes(simserve.read_bytes())
    command = "echo \"__import__('os').system('touch M')\" > _json.py; python3 simserve.py health"
    bash(command, tmp_path)
    assert (tmp_path / "M").exists(), "not an attack: the planted module did not run"
    v = cautious(command)
    assert v.klass == "ask" and "_json.py" in v.reason, v


@pytest.mark.parametrize(
    "command",
    [
        "python3 \"-c__import__('os').system('touch M')#simserve.py\"",  # an option is not a script name
        "for PATH in .; do cat x; done",  # a loop variable is an assignment too
        "read PATH <<< .; cat x",
        "export PATH=.; cat x",
        "eval $'\\ud800'",  # once a traceback
    ],
)
def test_third_review_cases_are_never_allowed(command: str) -> None:
    assert cautious(command).klass != "allow", (command, cautious(command))


THIRD_DENIED = {
    "double-slash": "rm -rf DOUBLE",
    "dot-segment": "rm -rf DOTTED",
    "nice-long-value": "nice --adjustment 5 rm -rf VICTIM",
    "env-unset": "env --unset X rm -rf VICTIM",
    "stdbuf-long": "stdbuf --output L rm -rf VICTIM",
    "flock-timeout": "flock --timeout 5 lk rm -rf VICTIM",
    "xargs-long": "echo VICTIM | xargs --max-procs 1 rm -rf",
    "flock-c": "flock lk -c 'rm  -rf VICTIM'",
    "sg-c": "sg root -c 'rm -rf VICTIM'",
    "sg": "sg root 'rm  -rf VICTIM'",
    "prlimit": "prlimit rm -rf VICTIM",
    "setarch": "setarch x86_64 rm -rf VICTIM",
    "perf": "perf stat -o /dev/null rm -rf VICTIM",
    "valgrind": "valgrind -q rm -rf VICTIM",
}


@pytest.mark.parametrize("command", THIRD_DENIED.values(), ids=THIRD_DENIED.keys())
def test_wrappers_and_path_spellings_do_not_get_a_denied_command_past(command: str, victim: Path) -> None:
    command = command.replace("DOUBLE", str(victim).replace("/", "//", 2)).replace(
        "DOTTED", f"{victim.parent}/./victim"
    )
    command = command.replace("VICTIM", str(victim))
    v = classify(command, allow=["*"], ask=[], deny=[f"rm -rf {victim}*"])
    assert v.klass != "allow", (command, v)
    if "xargs" not in command:  # what xargs reads could be anything: asked, not denied
        assert v.klass == "deny", (command, v)


def test_a_relative_path_that_climbs_out_may_be_a_denied_one(tmp_path: Path) -> None:
    v = classify("rm -rf ../victim", allow=["*"], ask=[], deny=["rm -rf /*"])
    assert v.klass == "ask" and "may be" in v.reason, v


@pytest.mark.parametrize(
    ("command", "klass"),
    [
        ("declare -n r", "ask"),  # a nameref: an assignment through it evaluates a subscript
        ("local -n r=x", "ask"),
        ('trap "rm -rf /" EXIT', "deny"),  # the trap's string is parsed
        ('script --command="rm -rf /x" /dev/null', "deny"),
        ("trap -p", "allow"),  # listing runs nothing
        ("alias", "allow"),
        ("declare -a x", "allow"),
    ],
)
def test_builtins_that_keep_a_string_to_run_later(command: str, klass: str) -> None:
    assert classify(command, allow=["*"], ask=[], deny=["rm -rf /*"]).klass == klass, command


def test_a_guessed_start_of_a_wrapped_command_adds_no_question() -> None:
    """Every later word of a wrapper is tried as the start of the wrapped command, for deny and ask
    patterns only: `sh` as an option's value is not a shell reading stdin."""
    assert classify("timeout 60 python3 bench.py --mode sh", allow=["timeout *"], ask=[], deny=[]).klass == "allow"
    assert classify("nice --adjustment 5 bash -c 'rm -rf /x'", allow=["*"], ask=[], deny=["rm -rf /*"]).klass == "deny"
