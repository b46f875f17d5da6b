"""The demo simulator reads a well-formed command line without argparse (it starts thousands of times in a
run of the suite) and must read it exactly as argparse would: every command line the campaigns, docs and
tests give it, and generated ones, read alike both ways; what the quick reader declines, argparse reads."""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
SIMSERVE = ROOT / "examples" / "decode-campaign" / "simserve.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("simserve_under_test", SIMSERVE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sim = load()


def written_command_lines() -> list[list[str]]:
    """Every `simserve.py …` / `{{simserve}} …` command line written down in the repository."""
    found: set[tuple[str, ...]] = set()
    pattern = re.compile(r"(?:simserve\.py|\{\{simserve\}\})((?: +[-\w.,=]+)+)")
    for path in [*ROOT.glob("examples/**/*.yaml"), *ROOT.glob("docs/*.md"), *ROOT.glob("tests/**/*.py")]:
        for m in pattern.finditer(path.read_text(errors="replace")):
            words = shlex.split(m.group(1))
            if words and words[0] in sim.COMMANDS:
                found.add(tuple(words))
    return sorted(map(list, found))


WRITTEN = written_command_lines()


def test_the_repository_gives_the_simulator_many_command_lines() -> None:
    assert len(WRITTEN) > 40 and {w[0] for w in WRITTEN} >= {"init", "apply", "revert", "bench", "stress", "health"}


def fully(argv: list[str]) -> dict[str, object] | None:
    """What argparse reads from `argv`, or None where it stops with its usage error."""
    try:
        return vars(sim.parse_fully(argv))
    except SystemExit:
        return None


@pytest.mark.parametrize("argv", WRITTEN, ids=" ".join)
def test_every_written_command_line_reads_alike_both_ways(argv: list[str]) -> None:
    """Some are cut short (a template's value comes later, a policy test's fragment): argparse refuses
    those, and so must the quick reader, leaving them to argparse's error."""
    quick, slow = sim.parse_quickly(argv), fully(argv)
    assert (vars(quick) if quick else None) == slow, argv


def test_the_demos_own_command_lines_take_the_quick_path() -> None:
    demo = [w for w in WRITTEN if fully(w) is not None]
    assert len(demo) > 30 and all(sim.parse_quickly(w) is not None for w in demo)


def _value(kind: type, choices: list[str] | None) -> st.SearchStrategy[str]:
    if choices:
        return st.sampled_from([*choices, "nope"])
    if kind is int:
        return st.integers(-5, 1000).map(str) | st.sampled_from(["1.5", "x", ""])
    if kind is float:
        return st.floats(-10, 10, allow_nan=False).map(lambda f: f"{f:.3g}") | st.sampled_from(["1e3", "inf", "x"])
    return st.text("0123456789,", max_size=6) | st.sampled_from(["--wall", "-x", "--jump-if"])


@st.composite
def command_lines(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(sim.COMMANDS)))
    argv = [command]
    spec = sim.COMMANDS[command]
    for name, kind, _, choices, _ in draw(st.lists(st.sampled_from(spec), max_size=6)) if spec else []:
        if kind is bool:
            argv.append(name)
        elif name.startswith("--"):
            value = draw(_value(kind, choices))
            argv += [f"{name}={value}"] if draw(st.booleans()) else [name, value]
        else:
            argv.append(draw(_value(kind, choices)))
    if draw(st.booleans()) and len(argv) > 1:  # a stray word, an abbreviation or a help flag
        argv.insert(draw(st.integers(1, len(argv))), draw(st.sampled_from(["-h", "--conc", "extra", "--", "-5"])))
    return argv


@settings(max_examples=400, deadline=None)
@given(command_lines())
@example(["init", "--occupancy-effect", "-1e-05"])  # argparse takes it for an option, not a negative number
@example(["bench", "--wall", "-5"])  # and this one for a number
@example(["bench", "--wall", "-.5"])
@example(["bench", "--wall", "-5."])  # not a number to argparse: an option
@example(["bench", "--wall", "-\u0663"])  # an Arabic-Indic 3: a number to argparse (and to int, float)
@example(["bench", "--jump-runs", "--wall"])  # an option where a value should be
@example(["stress", "abort-cascade", "--degrade=1"])
def test_what_the_quick_reader_reads_argparse_reads_the_same(argv: list[str]) -> None:
    quick = sim.parse_quickly(argv)
    if quick is not None:  # what it declines goes to argparse, as every command line always did
        assert vars(quick) == fully(argv), argv


def test_a_mistake_gets_argparses_one_line_error_and_help_still_works(tmp_path: Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(SIMSERVE), *args], capture_output=True, text=True, cwd=tmp_path)

    bad = run("apply", "nope")
    assert bad.returncode == 2 and "invalid choice: 'nope'" in bad.stderr
    assert run("bench", "--concurrency", "many").returncode == 2
    assert "--wedge-rate" in run("stress", "--help").stdout
    assert run("init", "--seed", "3").returncode == 0
    abbreviated = run("bench", "--conc", "5", "--wall", "0")  # argparse's abbreviations still work
    assert abbreviated.returncode == 0 and "concurrency=5" in abbreviated.stderr


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


def without_c_json() -> ModuleType:
    """The simulator as a Python without `_json` runs it: the `json` package instead."""
    saved = sys.modules.get("_json")
    sys.modules["_json"] = None  # type: ignore[assignment]  # what makes `from _json import …` fail
    try:
        return load()
    finally:
        if saved is None:
            del sys.modules["_json"]
        else:
            sys.modules["_json"] = saved


plain = without_c_json()


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans())
def test_its_json_is_the_json_packages_byte_for_byte_and_reads_back(value: object, sort_keys: bool) -> None:
    """The simulator writes JSON with CPython's C encoder, not the `json` package (whose import is a third of
    its start); what it writes must be what `json.dumps` writes, and read back alike."""
    assert sim.make_scanner is not None and plain.make_scanner is None
    written = json.dumps(value, sort_keys=sort_keys)
    for module in (sim, plain):
        assert module.dumps(value, sort_keys=sort_keys) == written
        assert json.dumps(module.loads(written), sort_keys=sort_keys) == written  # NaN is not equal to itself


@pytest.mark.parametrize(
    "text", ["", "{", '{"a": 1} x', "[1,]", "NaNa", '{"a": 1}{"b": 2}', "\x0c1", "1\u2028", '"\x07"']
)
def test_what_is_not_one_json_value_is_refused_as_json_refuses_it(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)
    for module in (sim, plain):
        with pytest.raises(ValueError):
            module.loads(text)


def test_a_broken_state_file_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "server.json").write_text('{"seed": 3, "calls":')
    out = subprocess.run([sys.executable, str(SIMSERVE), "health"], capture_output=True, text=True, cwd=tmp_path)
    said = "simserve: server.json is not a JSON object; run `simserve.py init` again\n"
    assert out.returncode == 1 and out.stderr == said
