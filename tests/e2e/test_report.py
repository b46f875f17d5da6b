"""`signoff report SESSION`: a session's report from its verified journal, and what every report says of an
option: one effect size and one noise figure, each with what it is.

A calibrated simulator session (A/A pairs at setup, a post-stress check, a rollback) is where a report
used to show four "noise" figures per option (the A/A spread, the pairs' spread, what the pairs could have
seen, the rollback's band and its per-run noise) and two gains (the A/B's geometric mean and the
rollback's ratio of means): the console report and the Markdown and HTML reports are read option by
option here."""

from __future__ import annotations

import html as htmllib
import json
import math
import os
import re
import shutil
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DEMO, DEMO_DIR, FIXTURES, ROOT, SIGNOFF, fast

# Every figure of the noise kind is written with ±: the noise itself, a band, what the pairs could have seen.
PLUS_MINUS = re.compile(r"±\d+(?:\.\d+)?%")
GAIN = re.compile(r"^[ ]*(?:- |• )?gain ([+-]\d+\.\d)% output_tok_s \(geometric mean of the (\d+) paired ratios", re.M)
# An A/B that stopped early says so of its noise figure (fewer than tools.noise.MIN_RUNS pairs: a rough estimate).
NOISE = re.compile(
    r"noise ±(\d+\.\d)% \(sd of the (\d+) paired differences in this A/B, log scale"
    r"(?:; only \d+ pairs, a rough estimate)?\)"
)


def calibrated(text: str) -> str:
    """The fast demo with 4 A/A pairs at setup and a post-stress benchmark after each option's stress."""
    return fast(text).replace(
        "  guardrails: [p99_tpot]\n", "  guardrails: [p99_tpot]\n  calibrate_pairs: 4\n  post_stress_runs: 2\n"
    )


@pytest.fixture(scope="module")
def calibrated_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """One calibrated simulator session, run once: (its $SIGNOFF_HOME, the session id, the console report)."""
    home = tmp_path_factory.mktemp("calibrated")
    campaign = DEMO_DIR / f".test-calibrated-{os.getpid()}.yaml"
    campaign.write_text(calibrated(DEMO.read_text()))
    try:
        env = {**os.environ, "SIGNOFF_HOME": str(home), "USER": "tester", "COLUMNS": "200"}
        p = subprocess.run(
            [*SIGNOFF, "run", str(campaign), "--headless"], capture_output=True, text=True, env=env, cwd=ROOT
        )
    finally:
        campaign.unlink(missing_ok=True)
    assert p.returncode == 0, p.stderr
    assert "calibrate_pairs: 4" in calibrated(DEMO.read_text())
    session = re.search(r"session (\d{8}-\d{6}-[0-9a-f]{4})", p.stdout)
    assert session is not None, p.stdout
    return home, session.group(1), p.stdout


@pytest.fixture
def session(calibrated_session: tuple[Path, str, str], home: Path) -> str:
    """The calibrated session, copied under this test's $SIGNOFF_HOME."""
    source, sid, _ = calibrated_session
    shutil.copytree(source / "sessions" / sid, home / "sessions" / sid)
    return sid


def blocks(text: str, header: str, end: str) -> dict[int, str]:
    """Each option's part of a report: from its header (`header` with the option's number as group 1) to the
    next option's, the last one up to `end`."""
    found = list(re.finditer(header, text, re.M))
    assert found, text
    out = {}
    for here, after in zip(found, [*found[1:], None], strict=True):
        body = text[here.start() : after.start() if after else len(text)]
        out[int(here.group(1))] = body.split(end)[0] if after is None else body
    return out


def measured(journal: Path) -> dict[int, dict[str, float] | None]:
    """What each option's A/B measured, from its journal: the gain it estimated and the SD of its paired log
    ratios (None for an option never benchmarked)."""
    found: dict[int, dict[str, float] | None] = {}
    for line in journal.read_text().splitlines():
        e = json.loads(line)
        if e["kind"] == "finding":
            found.setdefault(e["option"], None)
        if e["kind"] == "ab.result":
            sd = statistics.stdev(math.log(r) for r in e["ratios"]) * 100
            found[e["option"]] = {"effect": e["effect_pct"], "noise": sd, "pairs": e["pairs"]}
    return found


def assert_one_of_each(block: str, where: str, ab: dict[str, float] | None) -> None:
    """One effect size and one noise figure, each labelled, and no second figure of either kind."""
    gains, noises = GAIN.findall(block), NOISE.findall(block)
    if ab is None:  # never benchmarked (the no-go): nothing measured, nothing to report
        assert not gains and not noises and not PLUS_MINUS.search(block), (where, block)
        return
    assert len(gains) == 1 and len(noises) == 1, (where, block)
    (gain, pairs), (noise, noise_pairs) = gains[0], noises[0]
    assert float(gain) == pytest.approx(ab["effect"], abs=0.05), where
    assert float(noise) == pytest.approx(ab["noise"], abs=0.05), where
    assert int(pairs) == int(noise_pairs) == ab["pairs"], where
    assert PLUS_MINUS.findall(block) == [f"±{noise}%"], (where, block)  # no band, no "could have seen"
    assert block.count(f"{gain}%") == 1, (where, block)  # the gain once, with its label
    for second in ("could have seen", "own effect (", "per run (", "interleaved pairs"):
        assert second not in block, (where, second, block)


def test_each_option_shows_one_labelled_effect_and_one_noise_figure_with_its_source(
    cli: Any, home: Path, session: str, calibrated_session: tuple[Path, str, str], tmp_path: Path
) -> None:
    ab = measured(home / "sessions" / session / "journal.jsonl")
    assert ab[1] is None and ab[2] is not None and ab[3] is not None and set(ab) == {1, 2, 3}
    console = calibrated_session[2]
    console_blocks = blocks(console, r"^#(\d) (?:kept|skipped|no-go|deferred|untested) — ", "gates and who decided")
    assert set(console_blocks) == {1, 2, 3}
    for oid, block in console_blocks.items():
        assert_one_of_each(block, f"console #{oid}", ab[oid])
    # The evidence is still there, headed by what verified it.
    assert re.search(r"rollback verified by [^:]*: check says not in effect", console_blocks[2]), console_blocks[2]
    # The A/A calibration is the session's, said once before the options, and named as such.
    assert console.count("A/A calibration before any change: noise ±") == 1

    md, page = tmp_path / "r.md", tmp_path / "r.html"
    assert cli("replay", session, "--export", str(md)).code == 0
    assert cli("replay", session, "--export", str(page)).code == 0
    for oid, block in blocks(md.read_text(), r"^### #(\d) ", "\n## ").items():
        assert_one_of_each(block, f"markdown #{oid}", ab[oid])
    for oid, block in blocks(page.read_text(), r"<h3>#(\d) ", "<h2>").items():
        plot = re.search(r"<svg.*?</svg>", block)
        if ab[oid] is not None:  # the plot draws the same gain and its CI, nothing else
            assert plot and f"{ab[oid]['effect']:+.1f}% CI" in plot.group()
        words = htmllib.unescape(re.sub(r"<[^>]+>", "\n", re.sub(r"<svg.*?</svg>", "", block)))
        assert_one_of_each(words, f"html #{oid}", ab[oid])


def test_the_json_report_names_both_figures_and_keeps_the_others_labelled(
    cli: Any, session: str, tmp_path: Path
) -> None:
    summary = cli("report", session, "--json")
    assert summary.code == 0, summary.stderr
    options = {o["id"]: o for o in summary.json()["options"]}
    assert options[1]["effect"] is None and options[1]["noise"] is None
    two = options[2]
    assert two["noise"]["source"] == "ab" and two["effect"]["statistic"] == "geometric mean of paired ratios"
    assert two["noise"]["line"].startswith("noise ±") and "paired differences in this A/B" in two["noise"]["label"]
    # The figures the summary leaves out are in the JSON report, each named.
    assert cli("report", session, str(tmp_path / "r.json")).code == 0
    data = json.loads((tmp_path / "r.json").read_text())
    others = {f["name"]: f for f in data["options"][1]["other_figures"]}
    assert {"detectable_pct", "ratio_of_means_pct", "calibration_sd_pct", "rollback_band_pct"} <= set(others)
    assert all(f["label"] for f in others.values())


def test_run_json_carries_each_options_effect_and_noise(finished_session: dict[str, Any]) -> None:
    options = {o["id"]: o for o in finished_session["options"]}
    assert options[1]["effect"] is None and options[1]["noise"] is None  # the no-go: never measured
    kept = options[3]
    assert kept["effect"]["pct"] == kept["gain_pct"] and kept["effect"]["ci"] == kept["ci"]
    # The pairs its A/B took (a sequential A/B stops when the verdict is in), the same for both figures.
    pairs = kept["evidence"]["ab"]["pairs"]
    assert kept["noise"]["source"] == "ab" and kept["noise"]["pairs"] == kept["effect"]["pairs"] == pairs >= 3


# ------------------------------------------------------------------ the command


@pytest.mark.xdist_group("finished-demo")  # shares a fixture made once per worker
def test_report_prints_writes_and_summarises_a_demo_session(
    cli: Any, finished_session: dict[str, Any], tmp_path: Path
) -> None:
    sid = finished_session["session"]
    printed = cli("report", sid)
    assert printed.code == 0, printed.stderr
    assert printed.stdout.startswith(f"# signoff session {sid}\n")
    # The same report `replay --export` writes.
    exported = tmp_path / "exported.md"
    assert cli("replay", sid, "--export", str(exported)).code == 0
    assert printed.stdout == exported.read_text()
    md = tmp_path / "REPORT.md"
    wrote = cli("report", sid, str(md))
    assert wrote.code == 0 and md.read_text() == printed.stdout
    assert wrote.stdout.startswith(f"wrote {md} (md; journal verified: OK: ")
    page = tmp_path / "report.txt"  # --format over the suffix
    assert cli("report", sid, str(page), "--format", "html").code == 0
    assert page.read_text().startswith("<!doctype html>") and "<script" not in page.read_text()
    as_json = cli("report", sid, "--format", "json")
    data = json.loads(as_json.stdout)
    assert data["session"] == sid and data["status"] == "finished" and data["verification"]["ok"] is True
    assert [o["outcome"] for o in data["options"]] == ["no-go", "skipped", "kept"]
    summary = cli("report", sid, str(tmp_path / "r.html"), "--json")
    assert summary.code == 0, summary.stderr
    s = summary.json()
    assert s["session"] == sid and s["format"] == "html" and s["path"] == str(tmp_path / "r.html")
    assert s["bytes"] == len((tmp_path / "r.html").read_bytes()) and s["verification"]["final"] is True
    assert s["options"][2]["effect"]["line"].startswith("gain +") and s["options"][2]["noise"]["line"].startswith(
        "noise ±"
    )


@pytest.mark.xdist_group("finished-demo")
def test_a_tampered_session_gets_no_report(cli: Any, finished_session: dict[str, Any], tmp_path: Path) -> None:
    """The attack: edit what the journal says an option measured, then ask for the report an auditor reads."""
    sid, journal = finished_session["session"], Path(finished_session["journal"])
    lines = journal.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if '"kind":"ab.result"' in line)
    lines[at] = lines[at].replace('"verdict":"improved"', '"verdict":"regressed"')
    journal.write_text("".join(lines))
    target = tmp_path / "report.html"
    r = cli("report", sid, str(target))
    assert r.code == 5, (r.code, r.stdout, r.stderr)
    assert not target.exists() and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    # the line edited no longer hashes to what the next one chains on
    assert f"its journal does not verify: FAILED at seq {at + 1}" in r.stderr and "no report was made" in r.stderr
    assert cli("report", sid, "--json").code == 5


@pytest.mark.xdist_group("finished-demo")
def test_a_changed_artifact_or_document_is_refused_too(cli: Any, finished_session: dict[str, Any]) -> None:
    """The chain can hold while what it vouches for is changed: an artifact, the session's policy copy."""
    sid, journal = finished_session["session"], Path(finished_session["journal"])
    artifact = next((journal.parent / "artifacts").iterdir())
    original = artifact.read_bytes()
    artifact.write_bytes(original + b"edited\n")
    r = cli("report", sid)
    assert r.code == 5 and "no report was made" in r.stderr and r.stdout == ""
    artifact.write_bytes(original)
    assert cli("report", sid).code == 0
    policy = journal.parent / "policy.yaml"
    policy.write_text(policy.read_text().replace("skip-unsafe", "skip-unsafe-edited"))
    r = cli("report", sid)
    assert r.code == 5 and "policy" in r.stderr and r.stdout == ""


@pytest.mark.parametrize("name", ["demo-autonomous", "ask-one-liners"])
def test_an_old_session_still_reports(name: str, cli: Any, tmp_path: Path) -> None:
    bundle = tmp_path / name
    shutil.copytree(FIXTURES / "journal-v1" / name, bundle)
    imported = cli("import", str(bundle), "--json")
    assert imported.code == 0, imported.stderr
    sid = imported.json()["session"]
    md = cli("report", sid)
    assert md.code == 0, md.stderr
    sections = blocks(md.stdout, r"^### #(\d) ", "\n## ")
    ab = measured(bundle / "journal.jsonl")
    assert set(sections) == set(ab) == {1, 2, 3}
    for oid, block in sections.items():
        assert_one_of_each(block, f"{name} #{oid}", ab[oid])
    kept = next(o for o in cli("report", sid, "--json").json()["options"] if o["outcome"] == "kept")
    assert kept["effect"]["pct"] == pytest.approx(22.6, abs=0.05)
    assert cli("report", sid, str(tmp_path / "old.html")).code == 0


def test_bad_input_is_one_line_and_writes_nothing(cli: Any, finished_session: dict[str, Any], tmp_path: Path) -> None:
    sid = finished_session["session"]
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    for args, said in (
        ((str(tmp_path / "report.pdf"),), "report.pdf: export to .md, .html or .json (or give --format)"),
        (("--format", "pdf"), "--format 'pdf': md, html or json"),
        ((str(tmp_path / "no-such-dir" / "r.md"),), "No such file or directory"),
        (("--key", str(tmp_path / "missing.pub")), "--key"),
    ):
        r = cli("report", sid, *args)
        assert r.code == 2 and said in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r
    missing = cli("report", "20990101-000000-0000")
    assert missing.code == 2 and "no session" in missing.stderr
    assert list(tmp_path.iterdir()) == []
