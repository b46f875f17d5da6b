"""SIGKILL signoff at named points (and at random moments), resume, and get the same decisions.

Each case is one session killed twice — at a first point, then again at a later point while resuming —
and resumed to the end. A killed process must really die there (exit -9), so a point that is never
reached fails the test instead of passing unnoticed.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agent.journal import verify
from tests.conftest import DEMO, ROOT, SIGNOFF, fast

# (first kill, second kill while resuming): 28 distinct points across every kind of step.
CASES: list[tuple[str, str]] = [
    ("journal:session.started", "journal:plan"),
    ("journal:file.uploaded", "journal:finding#2"),
    ("checkpoint#2", "torn:decision#1"),
    ("journal:decision#1", "journal:undo.recorded"),
    ("journal:command.started/apply#1", "ran:apply#1"),  # apply started, then ran unrecorded on resume
    ("journal:command.finished/apply#1", "journal:bench.run#3"),
    ("ran:toggle#3", "torn:bench.run#4"),
    ("journal:command.started/toggle#6", "journal:bench.progress#2"),
    ("journal:ab.result", "journal:stress.result#2"),
    ("ran:stress:abort-cascade#1", "journal:assessment"),
    ("journal:gate.opened#3", "ran:revert#1"),
    ("journal:command.started/revert#1", "journal:rollback"),
    ("checkpoint#12", "journal:kept"),
    ("journal:report", "journal:session.finished"),
]
RANDOM_KILLS = 2


def test_kill_9_anywhere_then_resume_reaches_the_same_decisions(tmp_path: Path) -> None:
    campaign = crash_campaign()
    try:
        seed = int(os.environ.get("SIGNOFF_CRASH_SEED", time.time_ns() % 10_000))
        rng = random.Random(seed)
        jobs: dict[str, Any] = {"reference": lambda: straight(tmp_path / "ref", campaign)}
        for i, (first, second) in enumerate(CASES):
            jobs[f"{first} then {second}"] = lambda h=tmp_path / f"c{i}", a=first, b=second: killed(h, campaign, a, b)
        for i in range(RANDOM_KILLS):
            delay = rng.uniform(0.5, 6.0)
            jobs[f"random kill after {delay:.2f}s (seed {seed})"] = lambda h=tmp_path / f"r{i}", d=delay: killed_at(
                h, campaign, d
            )
        with ThreadPoolExecutor(max_workers=3) as pool:
            futures = {name: pool.submit(job) for name, job in jobs.items()}
            results = {name: f.result() for name, f in futures.items()}
    finally:
        campaign.unlink(missing_ok=True)

    reference = results.pop("reference")
    assert reference["outcomes"] == {"1": ("no-go", None), "2": ("skipped", "unsafe"), "3": ("kept", "safe")}
    for name, got in results.items():
        assert got["outcomes"] == reference["outcomes"], name
        assert got["decisions"] == reference["decisions"], name
        assert got["verified"], f"{name}: {got['verify']}"
        assert not got["blind_reruns"], f"{name}: a mutation ran again without its check: {got['blind_reruns']}"
    # The points that cut a mutation short really exercised the ledger: the check settled them.
    settled = [a for r in results.values() for a in r["recovered"]]
    assert any("took effect" in a for a in settled) and any("did not take effect" in a for a in settled)


def crash_campaign() -> Path:
    """The demo, lean (no sleeps, five pairs, two verification runs, a 1 s stress deadline) and with a
    target whose answers do not depend on how often it was asked."""
    text = fast(DEMO.read_text()).replace("--wall 0.02", "--wall 0")
    text = text.replace("pairs: 6", "pairs: 5").replace("max_pairs: 10", "max_pairs: 5")
    text = text.replace("verify_runs: 3", "verify_runs: 2").replace("timeout: 1.5, runs: 3", "timeout: 1, runs: 3")
    # A hang that shows 55% of the time may not show again when a run cut short by the crash is repeated,
    # and then "unsafe" honestly becomes "ask": this target hangs every time, so the decisions can match.
    text = text.replace(
        "stress abort-cascade --requests 200", "stress abort-cascade --requests 200 --wall 0 --wedge-rate 1"
    )
    text = text.replace("stress idle-busy-bursts", "stress idle-busy-bursts --wall 0")
    path = DEMO.parent / f".test-crash-{os.getpid()}.yaml"
    path.write_text(text)
    return path


def signoff(home: Path, *args: str, crash: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SIGNOFF_HOME": str(home), "USER": "tester"}
    env.pop("SIGNOFF_CRASH_AT", None)
    if crash:
        env["SIGNOFF_CRASH_AT"] = crash
    return subprocess.run([*SIGNOFF, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=180)


def session_of(home: Path) -> str:
    (found,) = (home / "sessions").iterdir()
    return found.name


def straight(home: Path, campaign: Path) -> dict[str, Any]:
    r = signoff(home, "run", str(campaign), "--json")
    assert r.returncode == 0, r.stderr
    return summary(home, r.stdout)


def killed(home: Path, campaign: Path, first: str, second: str) -> dict[str, Any]:
    r = signoff(home, "run", str(campaign), "--json", crash=first)
    assert r.returncode == -9, f"{first} was never reached (exit {r.returncode}): {r.stderr[-500:]}"
    session = session_of(home)
    r = signoff(home, "resume", session, "--json", crash=second)
    assert r.returncode == -9, f"{second} was never reached after {first} (exit {r.returncode}): {r.stderr[-500:]}"
    r = signoff(home, "resume", session, "--json")
    assert r.returncode == 0, f"after {first} and {second}: {r.stderr[-800:]}"
    return summary(home, r.stdout)


def killed_at(home: Path, campaign: Path, delay: float) -> dict[str, Any]:
    env = {**os.environ, "SIGNOFF_HOME": str(home), "USER": "tester"}
    env.pop("SIGNOFF_CRASH_AT", None)
    proc = subprocess.Popen(
        [*SIGNOFF, "run", str(campaign), "--json"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    r = signoff(home, "resume", session_of(home), "--json")
    assert r.returncode == 0, f"after a kill at {delay:.2f}s: {r.stderr[-800:]}"
    return summary(home, r.stdout)


def summary(home: Path, stdout: str) -> dict[str, Any]:
    out = json.loads(stdout)
    path = Path(out["journal"])
    events = [json.loads(line) for line in path.read_text().splitlines()]
    report = verify(path)
    started = Counter(e["key"] for e in events if e["kind"] == "command.started" and e.get("key"))
    checked_again = Counter(
        e["key"] for e in events if e["kind"] == "mutation.recovered" and e["action"].startswith("run again")
    )
    return {
        "outcomes": {str(o["id"]): (o["outcome"], o["verdict"]) for o in out["options"]},
        "decisions": [
            (e["gate_kind"], e.get("option"), e["decision"]["action"]) for e in events if e["kind"] == "decision"
        ],
        "verified": report.ok,
        "verify": report,
        "blind_reruns": {k: n for k, n in started.items() if n - 1 > checked_again[k]},
        "recovered": [e["action"] for e in events if e["kind"] == "mutation.recovered"],
    }
