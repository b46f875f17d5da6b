"""What runs is what the policy checked (issue 32): each attack of this round, reproduced first.

- A backslash before a blank and a `#` (`true \\ #; rm -rf …`) made the grammar read a comment where bash reads an
  escaped blank and then `;`: the `rm` ran under `cautious`, and `signoff check` called the line allowed.
- Over SSH commands ran under `sh -c` (dash on Debian), which reads `$'\\'…'` differently from the bash the policy
  models: `echo $'\\'; touch …; #'` is one quoted word to the policy and a `touch` to dash.
- `cat *` allowed `tools/cat README` (only basenames were compared): a repository's own `tools/cat` ran ungated.
- An exported function (`BASH_FUNC_echo%%`), BASH_ENV or a relative PATH entry changed what an allowed word ran.
- The investigation tools read a symlink to a credential file, and took `grep -d recurse`, `--recur`, `-nR` and
  `rgrep` for a plain grep.

The general check — thousands of generated commands run in an instrumented bash — is test_differential_shell.py.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.exec.planning import Planned, clear
from tests import sshd as harness
from tests.conftest import journal_events
from tests.e2e.test_evidence import MINI
from tools.artifacts import ArtifactStore
from tools.commands import classify
from tools.ssh import KnownHosts, SSHTransport
from tools.transport import Host, LocalTransport, TransportError

ROOT = Path(__file__).resolve().parents[2]
CAUTIOUS = yaml.safe_load((ROOT / "policies" / "presets" / "cautious.yaml").read_text())["commands"]


def cautious(command: str) -> Any:
    return classify(command, allow=CAUTIOUS["allow"], ask=CAUTIOUS["ask"], deny=CAUTIOUS["deny"])


# ------------------------------------------------------------------ an escaped blank before `#`, end to end


def test_an_escaped_blank_before_a_hash_runs_only_what_the_policy_read(cli, variant, tmp_path: Path) -> None:
    """`signoff run` under cautious: the lines are allowed for what the policy read (`true`, `echo "x"`), and that
    is all bash is given; `signoff check` shows the same executed form the journal records."""
    victims = [tmp_path / "victim-1", tmp_path / "victim-2"]
    for v in victims:
        (v / "precious").mkdir(parents=True)
    setup = [f"true \\ #; rm -rf {victims[0]}", f'echo "x"\\ #; rm -rf {victims[1]}']
    listed = ", ".join(json.dumps(s) for s in [*setup, "{{simserve}} init --seed 3"])
    campaign = variant(MINI.replace('setup: ["{{simserve}} init --seed 3"]', f"setup: [{listed}]"), name="blank")
    policy = tmp_path / "policy.yaml"
    policy.write_text('extends: cautious\nname: t\ncommands: {allow: ["touch broken", "rm -f broken"]}\n')

    checked = cli("check", str(campaign), "--policy", str(policy), "--json")
    rows = {r["command"]: r for r in checked.json()["commands"]}
    assert rows[setup[0]]["klass"] == "allow" and rows[setup[0]]["runs"] == "true"
    assert rows[setup[1]]["klass"] == "allow" and rows[setup[1]]["runs"] == 'echo "x"'
    assert "runs as: true" in cli("check", str(campaign), "--policy", str(policy)).stdout

    r = cli("run", str(campaign), "--policy", str(policy), "--json")
    assert r.code == 0, r.stderr
    assert all((v / "precious").is_dir() for v in victims), "bash ran a command the policy never read"
    started = [e for e in journal_events(r.json()["journal"]) if e["kind"] == "command.started"]
    assert {e.get("runs") for e in started if e["command"] in setup} == {"true", 'echo "x"'}
    # check and run agree: every command check allows runs in the form it shows.
    for e in started:
        row = rows.get(e["command"])
        if row is not None and row["klass"] == "allow":
            assert e.get("runs", e["command"]) == row["runs"], e


# ------------------------------------------------------------------ one shell: bash, started clean


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Callable[..., tuple[LocalTransport, Host, Path]]]:
    made: list[LocalTransport] = []

    def make(**extra: Any) -> tuple[LocalTransport, Host, Path]:
        t = LocalTransport(tmp_path / "hosts", ArtifactStore(tmp_path / "artifacts"))
        made.append(t)
        host = Host.model_validate({"name": "h", **extra})
        return t, host, Path(t.workdir(host))

    yield make
    for t in made:
        t.close()


def _run(transport: Any, host: Host, command: str) -> Any:
    """As signoff runs a command: classified under cautious, cleared, then its cleared form on the transport."""
    p = Planned(host=host, command=command)
    cleared = clear(p, cautious(command))
    assert cleared is not None, cautious(command)
    return transport.run(host, cleared.script, timeout=20)


def test_what_the_environment_exports_never_changes_what_an_allowed_word_runs(
    local: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mark = tmp_path / "PWNED"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"touch {mark}\n")
    monkeypatch.setenv("BASH_ENV", str(evil))
    monkeypatch.setenv("ENV", str(evil))
    monkeypatch.setenv("BASH_FUNC_echo%%", f"() {{ touch {mark}; }}")
    monkeypatch.setenv("BASH_FUNC_cat%%", f"() {{ touch {mark}; }}")
    transport, host, workdir = local(inherit_env=["BASH_ENV", "ENV", "BASH_FUNC_*"])
    (workdir / "README").write_text("hello\n")
    # A relative PATH entry would find the workdir's own `cat` for the bare name a pattern allowed.
    (workdir / "cat").write_text(f"#!/bin/sh\ntouch {mark}\n")
    (workdir / "cat").chmod(0o755)
    monkeypatch.setenv("PATH", ".:" + os.environ["PATH"])
    for command in ["echo hi", "cat README"]:
        result = _run(transport, host, command)
        assert result.ok, result
    assert "hello" in _run(transport, host, "cat README").stdout_tail
    assert not mark.exists(), "a profile, an exported function or a relative PATH entry ran instead"
    assert _run(transport, host, "echo $BASH_VERSION").stdout_tail.strip()[:1].isdigit()


@pytest.fixture
def ssh(sshd: Any, tmp_path: Path) -> Iterator[tuple[SSHTransport, Host]]:
    t = SSHTransport(ArtifactStore(tmp_path / "artifacts"), KnownHosts([sshd.known_hosts], None), session="bash")
    yield t, sshd.host()
    t.close()


def test_over_ssh_a_command_runs_in_the_bash_the_policy_models(ssh: Any, sshd: Any) -> None:
    """The login shell of the test's user is /bin/sh (dash): before, `sh -c` read `$'\\'…'` as dash does."""
    transport, host = ssh
    mark = f"pwned-{os.getpid()}"
    command = f"echo $'\\'; touch {mark}; #'"
    assert cautious(command).klass == "allow"
    result = _run(transport, host, command)
    assert result.ok, result
    assert result.stdout_tail == f"'; touch {mark}; #\n"
    workdir = transport.workdir(host)
    listing = _run(transport, host, "ls -a")
    assert mark not in listing.stdout_tail, f"dash ran the touch in {workdir}"
    assert _run(transport, host, "echo $BASH_VERSION").stdout_tail.strip()[:1].isdigit()


def test_a_host_without_bash_is_refused_at_setup_in_one_line(tmp_path: Path, cli: Any) -> None:
    """A PATH without bash (sshd's SetEnv), but with everything signoff's own setup needs: the transport refuses the
    host in one line, and a run stops at setup with that line, nothing run."""
    tools = Path(tempfile.mkdtemp(prefix="signoff-nobash-"))  # the server's user must reach it
    tools.chmod(0o755)
    for name in ("sh", "timeout", "mkdir", "cat", "ps", "awk", "sleep"):
        found = shutil.which(name)
        assert found is not None
        (tools / name).symlink_to(found)
    try:
        server = harness.start(extra_config=f"SetEnv PATH={tools}")
    except harness.SSHDUnavailable as exc:
        shutil.rmtree(tools)
        if os.environ.get("SIGNOFF_SSHD_REQUIRED"):
            raise
        pytest.skip(str(exc))
    line = "gpu-a: bash is not installed there; signoff runs every command with bash"
    try:
        t = SSHTransport(ArtifactStore(tmp_path / "a"), KnownHosts([server.known_hosts], None), session="nobash")
        with pytest.raises(TransportError) as raised:
            t.workdir(server.host("gpu-a"))
        t.close()
        assert str(raised.value) == line
        host = json.dumps(server.host("gpu-a").model_dump(exclude_defaults=True))
        campaign = tmp_path / "campaign.yaml"
        campaign.write_text(
            f"name: nobash\ngoal: {{text: t, metric: x}}\nhosts: [{host}]\nbaseline: {{setup: [echo hi]}}\n"
            "benchmark: {run: echo 1, on: gpu-a, parser: regex, patterns: {x: '([0-9]+)'}, metric: x}\n"
            "options: [{id: 1, title: t, apply: [echo a], revert: [echo r]}]\n"
        )
        r = cli("run", str(campaign), "--headless", "--json")
        assert r.code == 1 and r.json()["error"] == f"baseline setup failed: {line}", (r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
    finally:
        server.stop()
        shutil.rmtree(tools)


# ------------------------------------------------------------------ program identity


@pytest.mark.parametrize("command", ["tools/cat README", "./tools/cat README", "/tmp/cat README", "bin/../cat x"])
def test_an_allow_pattern_for_a_name_never_allows_a_file_of_that_name(command: str) -> None:
    verdict = cautious(command)
    assert verdict.klass == "ask" and verdict.reason == "matches no allow pattern", verdict


def test_a_pattern_with_a_path_allows_that_path_segment_by_segment() -> None:
    rules = {"allow": ["/usr/bin/cat *", "/**/python* *simserve.py *"], "ask": [], "deny": []}
    assert classify("/usr/bin/cat README", **rules).klass == "allow"
    assert classify("cat README", **rules).klass == "ask"  # the one on PATH is not named
    assert classify("/usr/bin/../../tmp/cat README", **rules).klass == "ask"
    assert classify("/opt/venv/bin/python3 simserve.py bench", **rules).klass == "allow"
    assert classify("/usr/lib/python3/../../bin/touch simserve.py x", **rules).klass == "ask"


# ------------------------------------------------------------------ the investigation tools


def test_a_repositorys_own_cat_is_requested_never_run(toolbox: Any) -> None:
    tools, workdir, _ = toolbox
    (workdir / "tools").mkdir()
    (workdir / "tools" / "cat").write_text("#!/bin/sh\ntouch PWNED\n")
    (workdir / "tools" / "cat").chmod(0o755)
    for command in ["tools/cat README", "./tools/cat README"]:
        text, failed = tools.run_readonly("gpu-a", command)
        assert failed and text.startswith("NOT RUN"), text
    assert not (workdir / "PWNED").exists()
    assert not tools.run_readonly("gpu-a", "cat README")[1]


@pytest.mark.parametrize(
    "command",
    [
        "grep -r password .",
        "grep -R password .",
        "grep -nr password .",
        "grep -inR password .",
        "grep -d recurse password .",
        "grep -drecurse password .",
        "grep -d rec password .",
        "grep --directories=recurse password .",
        "grep --directories recurse password .",
        "grep --direc=rec password .",
        "grep --recursive password .",
        "grep --recur password .",
        "grep --dereference-rec password .",
        "grep -nd recurse password .",
        "rgrep password .",
        "egrep -r password .",
        "grep --color -r password .",
        "grep --colour -R password .",
        "grep -e -r password .",
    ],
)
def test_recursive_grep_is_refused_in_every_spelling(toolbox: Any, command: str) -> None:
    tools, _, d = toolbox
    text, failed = tools.run_readonly("gpu-a", command)
    assert failed and "use the grep tool" in text, text
    tools.ctx.journal.close()
    assert not [e for e in journal_events(d.journal) if e["kind"] == "command.started"]


def test_a_plain_grep_still_runs(toolbox: Any) -> None:
    tools, _, _ = toolbox
    for command in ["grep -n hello README", "grep -e -x README", "grep -c hello README"]:
        text, _ = tools.run_readonly("gpu-a", command)
        assert "use the grep tool" not in text, command


def test_a_symlink_to_a_credential_is_resolved_on_the_host_and_refused(toolbox: Any, tmp_path: Path) -> None:
    tools, workdir, d = toolbox
    keys = tmp_path / "someone" / ".ssh"
    keys.mkdir(parents=True)
    (keys / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nSECRET-KEY-MATERIAL\n")
    (workdir / "notes.txt").symlink_to(keys / "id_ed25519")
    (workdir / "docs").symlink_to(keys)
    calls = [
        lambda: tools.read_file("gpu-a", "notes.txt"),
        lambda: tools.run_readonly("gpu-a", "cat notes.txt"),
        lambda: tools.run_readonly("gpu-a", "head -n 5 notes.txt"),
        lambda: tools.run_readonly("gpu-a", "grep -n KEY notes.txt"),
        lambda: tools.grep("gpu-a", "KEY", "notes.txt"),
        lambda: tools.list_dir("gpu-a", "docs"),
        lambda: tools.read_file("gpu-a", "docs/id_ed25519"),
    ]
    for call in calls:
        text, failed = call()
        assert failed and "REFUSED" in text and "credential" in text, text
        assert "SECRET-KEY-MATERIAL" not in text
    tools.ctx.journal.close()
    events = journal_events(d.journal)
    assert not any("SECRET-KEY-MATERIAL" in str(e) for e in events)
    refused = [e for e in events if e["kind"] == "command.refused"]
    # the last is refused by its own name; the others once their links were followed
    assert len(refused) == len(calls) and all("->" in e["part"] for e in refused[:-1])


def test_a_plain_file_still_reads_through_the_same_check(toolbox: Any) -> None:
    tools, _, _ = toolbox
    assert "hello" in tools.read_file("gpu-a", "README")[0]
    assert "README" in tools.list_dir("gpu-a", ".")[0]


def test_a_person_is_asked_about_what_will_run_not_what_the_model_wrote(toolbox: Any) -> None:
    """run_readonly runs the model's words one by one: `#` is not a comment there, so the gate shows the words
    quoted (`touch README '#' -r PWNED`), which is what an approval then runs, not a text that reads shorter."""
    tools, _, _ = toolbox
    text, failed = tools.run_readonly("gpu-a", "touch README # -r PWNED")
    assert failed and text.startswith("NOT RUN")
    assert tools.requests == [{"host": "gpu-a", "command": "touch README '#' -r PWNED"}]


# ------------------------------------------------------------------ what a person approves, and what cannot be made


@pytest.mark.parametrize("command", ['sudo echo "x"\\ #; rm -rf ~', 'echo {a,b}"x"\\ #; rm -rf ~'])
def test_a_denied_command_hidden_from_the_grammar_is_never_offered_for_approval(command: str) -> None:
    """An asked command runs as written once a person approves it, and bash reads that text by its own rules: a
    deny pattern is tried on the text cut at every separator too, so a person is never asked to approve it."""
    verdict = cautious(command)
    assert verdict.klass == "deny" and verdict.pattern == "rm -rf ~*", verdict


def test_a_cleared_command_runs_only_the_form_its_own_verdict_judged() -> None:
    import dataclasses

    host = Host(name="h")
    cleared = clear(Planned(host=host, command="echo hi"), cautious("echo hi"))
    assert cleared is not None and cleared.runs == "echo hi"
    with pytest.raises(TypeError):
        dataclasses.replace(cleared, planned=Planned(host=host, command="rm -rf ~"))
    with pytest.raises(TypeError):  # another command's verdict
        clear(Planned(host=host, command="touch x"), cautious("echo hi"))


@pytest.mark.parametrize("command", ["printf %s $'\\xe2\\x9c\\x93'", "echo $'\\u2713'", "echo $'\\342\\234\\223'"])
def test_an_ansi_c_string_of_high_bytes_is_asked_not_rewritten(command: str) -> None:
    """`$'\\xe2\\x9c\\x93'` is three bytes to bash; written back as text it would be six: asked, run as written."""
    verdict = classify(command, allow=["printf *", "echo *"], ask=[], deny=[])
    assert verdict.klass == "ask" and verdict.runs is None, verdict


def test_a_path_with_no_absolute_entry_falls_back_to_the_system_directories(
    local: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty PATH makes bash search the working directory; one with only relative entries is cut to empty."""
    mark = tmp_path / "PWNED"
    transport, host, workdir = local()
    (workdir / "cat").write_text(f"#!/bin/sh\ntouch {mark}\n")
    (workdir / "cat").chmod(0o755)
    (workdir / "README").write_text("hello\n")
    monkeypatch.setenv("PATH", ".:bin")
    assert "hello" in _run(transport, host, "cat README").stdout_tail
    assert not mark.exists()
