"""Bypasses of issue 32's guard ("nothing runs that the policy or a person did not allow"), found by attacking it.

Each test reproduces one hole: all of them failed on the code they were found on (main at fc76292) and pass since the
holes were closed (2546911), whichever way each was closed (the command asked about or refused, or made harmless).
Allowed commands are run the way signoff runs them — `Verdict.runs` under tools/transport.SHELL — only inside the
scratch harness of tests/shellfuzz.py (PATH a scratch bin with shims for forbidden programs, HOME a scratch home).

1. A quoted command substitution is matched against an allow pattern's word by its source text: `*simserve.py` takes
   `"$(echo '-c<code>#')"simserve.py`, which bash makes `-c<code>#simserve.py`, and python runs the code.
2. bash reads a "file descriptor" that does not fit an int (`2147483648>x`) as an ordinary word; the grammar reads it
   as a descriptor. `true 2147483648>/dev/null` runs `true` with an argument, and `echo ok; 2147483648>/dev/null`
   runs a program named `2147483648` that the classifier never saw (a statement of redirections alone is not checked
   against the allow patterns at all).
3. In a locale whose multibyte encoding has `\\` as a trailing byte (GBK, BIG5, Shift_JIS…), bash takes `中\\` for
   one character: the canonical form `echo "中\\"; rm -rf ~/victim; echo 中\\""` is one `echo` to the policy and an
   `rm -rf` to bash.
4. run_readonly resolves only operands that do not start with `-`: after `--`, `cat -- -notes` reads a symlink
   `-notes -> ~/.ssh/id_ed25519` that is never resolved.
5. The grep tool recurses with SECRET_EXCLUDES, which misses names SECRET_PATH calls credentials (`shadow`, `gshadow`,
   `environ`, `cmdline`, a key named `deploy_id_ed25519`): their contents come back to the model.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.shellfuzz import Ran, Scratch, run_traced, violations
from tools.commands import Verdict, analyse, classify
from tools.transport import SHELL

ROOT = Path(__file__).resolve().parents[2]
CAUTIOUS = yaml.safe_load((ROOT / "policies" / "presets" / "cautious.yaml").read_text())["commands"]
PERMISSIVE = {"allow": ["echo *", "cat *", "true", "printf *"], "ask": CAUTIOUS["ask"], "deny": CAUTIOUS["deny"]}
# The permissive policy's programs, for an oracle of its own: the builtin, and whether it may take arguments.
PERMISSIVE_PROGRAMS = {"echo": True, "cat": True, "true": False, "printf": True}


@dataclass
class Attempt:
    verdict: Verdict
    ran: Ran | None  # what bash did with Verdict.runs, when the policy allowed it
    bad: list[str]  # what ran that the policy does not allow

    def explain(self, text: str) -> str:
        if self.ran is None:
            return f"{text!r}: {self.verdict.klass} ({self.verdict.reason})"
        return (
            f"{text!r} is allowed ({self.verdict.reason}); bash was given {self.verdict.runs!r} and ran "
            f"{self.ran.traced!r}, leaving {self.ran.marks!r}: {self.bad}"
        )


def attempt(scratch: Scratch, text: str, rules: dict[str, list[str]]) -> Attempt:
    """`text` classified under `rules` and, when allowed, run as signoff runs it, inside the scratch harness only."""
    verdict = classify(text, allow=rules["allow"], ask=rules["ask"], deny=rules["deny"])
    if verdict.klass != "allow":
        return Attempt(verdict, None, [])
    assert verdict.runs is not None
    ran = run_traced(scratch, list(SHELL), verdict.runs)
    seen = {s.argv[0].text for s in analyse(verdict.runs).simples if s.argv}
    bad = violations(scratch, ran, seen) if rules is CAUTIOUS else _permissive_violations(ran)
    return Attempt(verdict, ran, bad)


def _permissive_violations(ran: Ran) -> list[str]:
    bad = [f"forbidden program left its mark: {m}" for m in ran.marks]
    for words in ran.traced:
        if not words:
            continue
        if words[0] not in PERMISSIVE_PROGRAMS:
            bad.append(f"ran {words!r}: not a program the policy allows")
        elif not PERMISSIVE_PROGRAMS[words[0]] and len(words) > 1:
            bad.append(f"ran {words!r}: `{words[0]}` is allowed only without arguments")
    return bad


@pytest.fixture
def scratch(tmp_path: Path) -> Scratch:
    return Scratch(tmp_path / "scratch")


# ------------------------------------------------------------------ 1. a quoted substitution as an allow pattern's word


@pytest.fixture
def with_python(scratch: Scratch) -> Scratch:
    """The scratch PATH with a `python3` on it, as every host that runs simserve.py has."""
    (scratch.bin / "python3").symlink_to(sys.executable)
    return scratch


PYTHON_DASH_C = [
    # `-c<code>#simserve.py`: the `#` makes the pattern's suffix a comment to python
    'python3 "$(echo \'-cimport os;os.system("touch ~/pwned")#\')"simserve.py',
    'python3 "$(echo \'-cimport os;os.system("rm -rf ~/victim")#\')"simserve.py bench',
    '/usr/bin/python3 "$(echo \'-cimport os;os.system("touch ~/pwned")#\')"simserve.py',
]


@pytest.mark.parametrize("text", PYTHON_DASH_C, ids=["touch", "rm-rf-with-args", "python-by-path"])
def test_a_quoted_substitution_cannot_make_simserve_py_a_dash_c(with_python: Scratch, text: str) -> None:
    """`python* *simserve.py *` (cautious) was meant to name a script, never `-c<code>#simserve.py` (`_Slot.matches`
    refuses a word that *starts* with `-`); a quoted `$(…)` is one word whose value is only known when bash runs it,
    and it is matched by its source text, which ends in `simserve.py` and does not start with `-`."""
    # cautious's `/**/python* *simserve.py *` allows the interpreter by its path too
    text = text.replace("/usr/bin/python3", str(with_python.bin / "python3"))
    found = attempt(with_python, text, CAUTIOUS)
    assert not (found.verdict.klass == "allow" and found.ran is not None and found.ran.marks), found.explain(text)


# ------------------------------------------------------------------ 2. a descriptor number bash reads as a word


@pytest.mark.parametrize(
    "text",
    ["true 2147483648>/dev/null", "true 99999999999>/dev/null", "true 2147483648</dev/null", "true 4294967296>&2"],
)
def test_true_with_a_descriptor_too_large_for_bash_runs_without_arguments(scratch: Scratch, text: str) -> None:
    """cautious allows `true` only without arguments; bash takes a number that does not fit an int for a word, so it
    runs `true 2147483648` — an argument the policy never saw, read by the grammar as a file descriptor."""
    found = attempt(scratch, text, CAUTIOUS)
    assert not found.bad, found.explain(text)


@pytest.mark.parametrize("text", ["echo ok; 2147483648>/dev/null", "echo ok && 2147483648</dev/null"])
def test_a_statement_of_redirections_alone_runs_no_program_the_policy_did_not_see(scratch: Scratch, text: str) -> None:
    """The grammar reads `2147483648>/dev/null` as a statement with no command (which the allow check skips, since
    another statement has one); bash runs the program `2147483648` — here a shim on PATH that leaves its mark."""
    shim = scratch.bin / "2147483648"
    shim.write_text('#!/bin/sh\n: > "$SCRATCH_HOME/RAN-2147483648"\n')
    shim.chmod(0o755)
    for rules in (CAUTIOUS, PERMISSIVE):
        found = attempt(scratch, text, rules)
        assert not found.bad, found.explain(text)


# ------------------------------------------------------------------ 3. a locale where `\` ends a multibyte character


def _compiled_locale(where: Path, name: str, source: str, charmap: str) -> None:
    localedef = shutil.which("localedef")
    if localedef is None or not Path(f"/usr/share/i18n/locales/{source}").exists():
        pytest.skip(f"cannot build the {name} locale here (no localedef or no {source} source)")
    subprocess.run([localedef, "-i", source, "-f", charmap, str(where / name)], check=False, capture_output=True)
    if not (where / name).is_dir():
        pytest.skip(f"localedef could not build {name}")


@dataclass
class LocaleScratch(Scratch):
    """The scratch harness with a host locale: what LocalTransport passes on (LC_*, LANG) or an SSH host is set to."""

    locale: str = "C"
    locpath: str = ""

    def environment(self) -> dict[str, str]:
        return {**super().environment(), "LC_ALL": self.locale, "LOCPATH": self.locpath}


@pytest.fixture(scope="module")
def locales(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("locales")


@pytest.mark.parametrize(
    ("name", "source", "charmap"),
    [("zh_CN.GBK", "zh_CN", "GBK"), ("zh_TW.BIG5", "zh_TW", "BIG5")],
    ids=["gbk", "big5"],
)
@pytest.mark.parametrize(
    "text",
    ['echo "中\\"; touch ~/pwned; echo 中\\""', 'echo "中\\"; rm -rf ~/victim; echo 中\\""'],
    ids=["touch", "rm-rf-denied"],
)
def test_the_canonical_form_means_the_same_in_a_multibyte_locale(
    tmp_path: Path, locales: Path, name: str, source: str, charmap: str, text: str
) -> None:
    """To the grammar (and in UTF-8) the line is `echo` with one double-quoted argument; in GBK or BIG5, `中` is the
    bytes E4 B8 AD and bash reads AD 5C as one character, so the `\\` no longer escapes the quote after it: the
    string ends there and `touch` (not allowed) or `rm -rf ~/victim` (denied) runs. The canonical form is this very
    text (a double-quoted literal stays double-quoted), so writing it back changes nothing."""
    if not (locales / name).is_dir():
        _compiled_locale(locales, name, source, charmap)
    scratch = LocaleScratch(tmp_path / "scratch", locale=name, locpath=str(locales))
    for rules in (CAUTIOUS, PERMISSIVE):
        found = attempt(scratch, text, rules)
        assert not found.bad, f"under LC_ALL={name}: {found.explain(text)}"


@pytest.mark.parametrize(
    ("text", "rules"),
    [
        # cautious: LC_ALL is "inert" in front of a command, and a function named `true` is called as `true`
        ('true () { echo "$( echo "中\\"; touch ~/pwned; echo 中\\"" )"; }; LC_ALL=zh_CN.GBK true', CAUTIOUS),
        ('true () { echo "$( echo "中\\"; rm -rf ~/victim; echo 中\\"" )"; }; LC_ALL=zh_CN.GBK true', CAUTIOUS),
        # a policy that allows printf: `printf -v` sets LC_ALL in the shell itself
        ('printf -v LC_ALL zh_CN.GBK; echo "$( echo "中\\"; touch ~/pwned; echo 中\\"" )"', PERMISSIVE),
    ],
    ids=["inert-lc-all-function", "inert-lc-all-function-rm", "printf-v-lc-all"],
)
def test_a_command_cannot_switch_bashs_locale_before_a_substitution_is_read(
    tmp_path: Path, locales: Path, text: str, rules: dict[str, list[str]]
) -> None:
    """The host's own locale is UTF-8; GBK is merely installed. bash keeps the text of a `$( … )` and parses it again
    when it expands it, in the locale of that moment; a command may set that locale first — `LC_ALL` in front of a
    function call (allowed as an inert variable) or `printf -v LC_ALL` — so the substitution's `echo "中\\"…"`
    becomes an `echo`, a `touch` (or a denied `rm -rf ~/victim`) and an `echo`."""
    if not (locales / "zh_CN.GBK").is_dir():
        _compiled_locale(locales, "zh_CN.GBK", "zh_CN", "GBK")
    scratch = LocaleScratch(tmp_path / "scratch", locale="C.UTF-8", locpath=str(locales))
    found = attempt(scratch, text, rules)
    assert not found.bad, found.explain(text)


# ------------------------------------------------------------------ the investigation tools


@pytest.fixture
def planted_key(tmp_path: Path) -> Path:
    keys = tmp_path / "someone" / ".ssh"
    keys.mkdir(parents=True)
    key = keys / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nSECRET-KEY-MATERIAL\n")
    return key


# ------------------------------------------------------------------ 4. run_readonly: a symlink named like an option


@pytest.mark.parametrize("command", ["cat -- -notes", "head -n 5 -- -notes", "grep -n KEY -- -notes", "tail -- -notes"])
def test_a_symlink_named_like_an_option_is_resolved_before_it_is_read(
    toolbox: Any, planted_key: Path, command: str
) -> None:
    """The same planted symlink that test_what_runs_is_what_was_checked refuses as `notes.txt`, named `-notes`:
    run_readonly resolves on the host only the operands that do not start with `-`, and after `--` this one is a file
    (the readonly patterns `cat *`, `head *`, … allow it; no word names a credential path)."""
    tools, workdir, _ = toolbox
    (workdir / "-notes").symlink_to(planted_key)
    text, _ = tools.run_readonly("gpu-a", command)
    assert "SECRET-KEY-MATERIAL" not in text, f"{command!r} returned the key: {text[:300]!r}"


# ------------------------------------------------------------------ 5. the grep tool: what SECRET_EXCLUDES leaves out


@pytest.mark.parametrize("name", ["shadow", "gshadow", "environ", "cmdline", "deploy_id_ed25519", "backup.id_rsa"])
def test_the_grep_tool_never_returns_a_file_the_read_tools_call_a_credential(toolbox: Any, name: str) -> None:
    """read_file refuses `conf/<name>` (SECRET_PATH); the grep tool, asked about the directory, recurses into it with
    SECRET_EXCLUDES, which has no `--exclude` for these names (and `id_rsa*`, `id_ed25519*` only match names that
    start with them), so their lines come back to the model."""
    from agent.exec.investigation import SECRET_PATH

    tools, workdir, _ = toolbox
    (workdir / "conf").mkdir()
    (workdir / "conf" / name).write_text("root:SECRET-CREDENTIAL-LINE\n")
    assert SECRET_PATH.search(f"conf/{name}"), "the read tools call this a credential"
    refused, failed = tools.read_file("gpu-a", f"conf/{name}")
    assert failed and "REFUSED" in refused
    text, _ = tools.grep("gpu-a", "SECRET", "conf")
    assert "SECRET-CREDENTIAL-LINE" not in text, f"grep returned conf/{name}: {text[:300]!r}"
