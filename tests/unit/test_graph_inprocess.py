"""The real graph, run in this process: `agent.graph.build()` compiled with LangGraph's in-memory
checkpointer, a real `RunContext`, `Journal` and policy preset, with the two stand-ins beside the seams —
a `MockTransport` playing a tiny decode server and a `ScriptedBrain`. No process starts, nothing sleeps.

The driver here does what `agent.run.runner.Runner` does around the graph (`session.started`, `invoke`
with the context as the runtime, `Command(resume={interrupt id: answer})`), minus the store and the
journaling of gates, which the runner does from the graph's updates: these tests read gates from the
graph's state and its `report` event instead.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from agent.brain.scripted import ScriptedBrain
from agent.context import RunContext
from agent.journal import events as ev
from agent.journal.chain import Journal, read_events
from agent.journal.view import SessionView, fold
from agent.models import Campaign
from agent.run.answers import answer
from policies.engine import PolicyEngine
from policies.gates import Decision, Gate
from policies.load import load_policy
from tools.artifacts import ArtifactStore
from tools.mock_transport import CommandRequest, MockTransport
from tools.transport import CommandResult

SESSION = "inprocess-1"
SRV = "{{python}} simserve.py"  # the presets allow `*python* *simserve.py *`; the mock answers, nothing runs
BASE_TOK_S = 1000.0
JITTER = (0.0, 0.004, -0.003, 0.002, -0.004, 0.003, -0.002)  # ±0.4 %, fixed: a noisy but repeatable server


class TinyServer:
    """A decode server the size of a dict: which features are on per host; throughput on the benchmark host
    is BASE_TOK_S times the speedup of each feature on there; a feature in `hangs` wedges stress runs."""

    def __init__(self, speedup: dict[str, float], hangs: Iterable[str] = ()) -> None:
        self.speedup = speedup
        self.hangs = set(hangs)
        self.on: dict[str, set[str]] = {}
        self.benches = 0
        self._lock = threading.Lock()

    def __call__(self, req: CommandRequest) -> CommandResult | str | int:
        verb, *args = req.command.split("simserve.py", 1)[1].split()
        with self._lock:
            on = self.on.setdefault(req.host.name, set())
            match verb:
                case "init":
                    on.clear()
                    return "initialised"
                case "health":
                    return json.dumps({"status": "ok"})
                case "apply":
                    on.add(args[0])
                    return f"{args[0]} on"
                case "revert":
                    on.discard(args[0])
                    return f"{args[0]} off"
                case "check":
                    return 0 if args[0] in on else 1
                case "bench":
                    self.benches += 1
                    tok_s = BASE_TOK_S * (1 + JITTER[self.benches % len(JITTER)])
                    for feature in on:
                        tok_s *= self.speedup.get(feature, 1.0)
                    return vllm_result(tok_s, num_prompts=int(args[args.index("--num-prompts") + 1]))
                case "stress":
                    if on & self.hangs:
                        return req.hang(f"{args[0]}: 200 requests aborted, waiting for ranks to drain")
                    return f"{args[0]}: 200 requests aborted, 0 stuck"
                case "dump":
                    return "Thread 0x7f (active): wait_for_tp_barrier (scheduler.py:412)"
        return 127


def vllm_result(tok_s: float, *, num_prompts: int) -> str:
    """What `vllm bench serve --save-result` writes (the fields the vllm-json parser reads)."""
    duration = num_prompts * 128 / tok_s
    return json.dumps(
        {
            "backend": "vllm",
            "num_prompts": num_prompts,
            "completed": num_prompts,
            "failed": 0,
            "duration": duration,
            "output_throughput": tok_s,
            "request_throughput": num_prompts / duration,
            "total_token_throughput": tok_s * 9,
            "p99_tpot_ms": 90_000 / tok_s,
        }
    )


def option(oid: int, feature: str) -> dict[str, Any]:
    return {
        "id": oid,
        "title": feature.replace("-", " "),
        "apply": [{"run": f"{SRV} apply {feature}", "on": "decode"}],
        "revert": [{"run": f"{SRV} revert {feature}", "on": "decode"}],
        "check": f"{SRV} check {feature}",
    }


def campaign(*options: dict[str, Any], **bench: Any) -> Campaign:
    """The tiny campaign; `bench`: benchmark fields to set (the rest as below)."""
    return Campaign.model_validate(
        {
            "name": "inprocess-mock",
            "goal": {"text": "decode throughput up", "metric": "output_tok_s", "target_pct": 10.0},
            "hosts": [{"name": "gpu-a", "roles": ["decode"]}, {"name": "gpu-b", "roles": ["decode"]}],
            "baseline": {
                "setup": [{"run": f"{SRV} init", "on": "decode", "timeout": 10}],
                "health": [{"run": f"{SRV} health", "on": "decode", "timeout": 5}],
            },
            "benchmark": {
                "run": f"{SRV} bench --num-prompts {{{{num_prompts}}}}",
                "on": "gpu-a",
                "parser": "vllm-json",
                "num_prompts": 100,
                "metric": "output_tok_s",
                "pairs": 4,
                "max_pairs": 4,
                "timeout": 30,
                **bench,
            },
            "stress": [
                {
                    "name": "abort-cascade",
                    "run": f"{SRV} stress abort-cascade",
                    "on": "gpu-a",
                    "timeout": 2,
                    "runs": 2,
                    "diagnose": f"{SRV} dump",
                }
            ],
            "rollback": {"verify_runs": 3, "settle_wait_s": 0},
            "options": list(options),
        }
    )


@functools.cache
def compiled() -> Any:
    from agent.graph import build

    return build().compile()


@dataclass
class InProcess:
    """One session of the real graph in this process."""

    tmp: Path
    campaign: Campaign
    policy: str
    server: TinyServer
    brain: ScriptedBrain = field(default_factory=ScriptedBrain)
    headless: bool = True

    def __post_init__(self) -> None:
        artifacts = ArtifactStore(self.tmp / "artifacts")
        self.mock = MockTransport(self.server, artifacts=artifacts)
        self.journal_path = self.tmp / "journal.jsonl"
        self.journal = Journal(self.journal_path, SESSION)
        self.saver = InMemorySaver()
        policy = load_policy(self.policy)
        self.ctx = RunContext(
            session=SESSION,
            campaign=self.campaign,
            campaign_dir=self.tmp,
            transport=self.mock,
            artifacts=artifacts,
            journal=self.journal,
            policy=policy,
            engine=PolicyEngine(policy),
            brain=self.brain,
            headless=self.headless,
            started_at=time.time(),
        )
        self.config = {"configurable": {"thread_id": SESSION}, "max_concurrency": 8, "recursion_limit": 500}
        self.journal.append(
            ev.SessionStartedEvent(
                campaign_name=self.campaign.name,
                campaign_text=yaml.safe_dump(self.campaign.model_dump(mode="json")),
                policy_name=policy.name,
                brain=self.brain.name,
                headless=self.headless,
            )
        )

    def graph(self) -> Any:
        """The compiled graph bound to this session's checkpointer (a fresh copy each time, as the runner's)."""
        return compiled().copy(update={"checkpointer": self.saver})

    def start(self) -> Any:
        return self._drive({})

    def gate(self) -> tuple[str, Gate]:
        (pending,) = self.graph().get_state(self.config).interrupts
        return pending.id, Gate.model_validate(pending.value["gate"])

    def decide(self, text: str, *, by: str = "human:tester") -> Any:
        """A person's one-liner at the pending gate, read by the brain and resumed from the checkpoint."""
        interrupt_id, gate = self.gate()
        decision = self.brain.interpret(text, gate).model_copy(update={"by": by})
        said = answer(gate, decision, next_rule=1)
        return self._drive(Command(resume={interrupt_id: {**said.payload(), "echo": said.echo}}))

    def _drive(self, inp: Any) -> Any:
        graph = self.graph()
        graph.invoke(inp, self.config, context=self.ctx, durability="sync")
        return graph.get_state(self.config)

    def events(self, kind: str | None = None, **fields: Any) -> list[dict[str, Any]]:
        lines = read_events(self.journal_path)
        return [e for e in lines if kind in (None, e["kind"]) and all(e.get(k) == v for k, v in fields.items())]

    def view(self) -> SessionView:
        return fold(read_events(self.journal_path))

    def gates(self, snapshot: Any) -> list[tuple[str, str, str | None]]:
        return [(g["kind"], g["decision"]["action"], g["decision"].get("by")) for g in snapshot.values["gates"]]


def last_index(mock: MockTransport, containing: str, host: str) -> int:
    return max(i for i, r in enumerate(mock.requests) if containing in r.command and r.host.name == host)


def test_a_clear_win_is_kept_journaled_as_kept_and_the_view_agrees(tmp_path: Path) -> None:
    run = InProcess(tmp_path, campaign(option(1, "moe-occupancy")), "autonomous", TinyServer({"moe-occupancy": 1.2}))
    snapshot = run.start()
    assert not snapshot.interrupts and not snapshot.next  # the graph reached its end

    (ab,) = run.events("ab.result", option=1)
    assert ab["verdict"] == "improved" and 18 < ab["effect_pct"] < 22
    pairs = ab["pairs"]  # a sequential A/B: as many as it took, within the campaign's 4
    assert pairs == ab["pairs_run"] <= 4 and ab["stopped_by"] == "improved"
    (assessment,) = run.events("assessment", option=1)
    assert (assessment["verdict"], assessment["recommendation"]) == ("safe", "keep")
    assert [(e["option"], e["by"]) for e in run.events("kept")] == [(1, "policy:keep-win")]
    assert not run.events("rollback") and not run.events("phase", phase="rollback")
    (report,) = run.events("report")
    assert report["kept"] == [1] and report["error"] is None
    assert ("safety", "continue", "policy:keep-win") in run.gates(snapshot)

    view = run.view()  # the one fold every reader shares says the same
    o = view.options[1]
    assert (o.status, o.outcome, o.decided_by) == ("kept", "kept", "policy:keep-win")
    assert o.ab_verdict == "improved" and o.gain_pct == ab["effect_pct"] and o.verdict == "safe"
    assert len(o.pairs()) == pairs and all(b > a for _, a, b in o.pairs() if a and b)
    assert all((tmp_path / "artifacts" / r.artifact).is_file() for r in o.runs if r.artifact)  # output kept
    assert all(r.artifact for r in o.runs)
    assert view.report is not None and view.report.kept == [1] and not view.unrecognized

    # What the hosts were asked: the option applied on both decode hosts, the benchmark on gpu-a only
    # (3 baseline runs, then the A/B pairs), and the option left on, since it was kept.
    assert {r.host.name for r in run.mock.sent(" bench ")} == {"gpu-a"}
    confirm = len(run.events("bench.run", purpose="confirm"))  # the goal's confirmation A/B at the end
    assert confirm >= 2 * 4 and len(run.mock.sent(" bench ")) == 3 + 2 * pairs + confirm
    assert {r.host.name for r in run.mock.sent("apply moe-occupancy")} == {"gpu-a", "gpu-b"}
    for host in ("gpu-a", "gpu-b"):
        assert last_index(run.mock, "apply moe-occupancy", host) > last_index(run.mock, "revert moe-occupancy", host)
    assert run.server.on == {"gpu-a": {"moe-occupancy"}, "gpu-b": {"moe-occupancy"}}
    assert len(run.mock.sent(" stress ")) == 2 and not run.mock.sent(" dump")
    assert all(r.stdin is None and r.timeout > 0 for r in run.mock.requests)
    assert [c.method for c in run.brain.calls if c.method != "plan"] == ["investigate", "assess"]
    # Each request says whether a second run of it would harm nothing, as its caller declared (never read off its
    # purpose's name): benchmark runs only look; applying and reverting an option change the host.
    assert run.mock.sent(" bench ") and all(r.reads_only for r in run.mock.sent(" bench "))
    changes = [
        *run.mock.sent("apply moe-occupancy"),
        *run.mock.sent("revert moe-occupancy"),
        *run.mock.sent(" stress "),
    ]
    assert changes and not any(r.reads_only for r in changes)


def test_a_clear_win_is_decided_sequentially_in_fewer_pairs_than_pairs_and_says_why(tmp_path: Path) -> None:
    # The demo's benchmark settings (pairs 6, max_pairs 10, noise_pct 1) and its option #3: +22 %, 18 % expected.
    three = {**option(3, "moe-occupancy"), "expected_gain_pct": 18}
    demo = campaign(three, pairs=6, max_pairs=10, noise_pct=1.0)
    assert demo.benchmark.sequential  # the default
    run = InProcess(tmp_path, demo, "autonomous", TinyServer({"moe-occupancy": 1.22}))
    run.start()

    (ab,) = run.events("ab.result", option=3)
    assert ab["verdict"] == "improved" and 20 < ab["effect_pct"] < 24
    assert ab["stopped_by"] == "improved" and ab["pairs"] == ab["pairs_run"] < 6
    assert ab["cs_low"] > 1.0 and ab["cs_low"] < ab["ci_low"]  # the always-valid sequence cleared the noise band
    (stopped,) = run.events("bench.stopped", option=3)
    assert stopped["stopped_by"] == "improved" and stopped["pairs"] == ab["pairs"] and stopped["max_pairs"] == 10
    assert stopped["runs"] == 2 * ab["pairs"] and "clears +1%" in stopped["reason"]
    confirm = len(run.events("bench.run", purpose="confirm"))  # then the goal's confirmation A/B
    assert len(run.mock.sent(" bench ")) == 3 + 2 * ab["pairs"] + confirm  # the baseline runs, the pairs it took
    assert [e["of"] for e in run.events("bench.progress", option=3)] == [10] * ab["pairs"]
    view = run.view()
    assert view.options[3].status == "kept" and not view.unrecognized


def test_sequential_false_is_the_fixed_n_a_b_pairs_then_one_extension(tmp_path: Path) -> None:
    three = {**option(3, "moe-occupancy"), "expected_gain_pct": 18}
    fixed = campaign(three, pairs=6, max_pairs=10, noise_pct=1.0, sequential=False)
    run = InProcess(tmp_path, fixed, "autonomous", TinyServer({"moe-occupancy": 1.22}))
    run.start()
    (ab,) = run.events("ab.result", option=3)
    assert ab["verdict"] == "improved" and ab["pairs"] == 6 and ab["stopped_by"] == "fixed"
    assert ab["cs_low"] is None and not run.events("bench.stopped")
    assert [e["of"] for e in run.events("bench.progress", option=3)] == [6] * 6
    assert len(run.mock.sent(" bench ")) == 3 + 2 * 6 + len(run.events("bench.run", purpose="confirm"))

    # +1 %, at the edge of the noise band: inconclusive at 6 pairs, extended once to 10, as before sequential tests.
    (tmp_path / "edge").mkdir()
    edge = campaign(option(2, "tweak"), pairs=6, max_pairs=10, sequential=False)
    run = InProcess(tmp_path / "edge", edge, "autonomous", TinyServer({"tweak": 1.01}))
    run.start()
    (ab,) = run.events("ab.result", option=2)
    (extended,) = run.events("bench.extended", option=2)
    assert (extended["from_pairs"], extended["to_pairs"]) == (6, 10) and ab["pairs"] == 10


def test_an_option_whose_stress_run_hangs_is_judged_unsafe_and_rolled_back(tmp_path: Path) -> None:
    server = TinyServer({"overlap-scheduler": 1.07}, hangs={"overlap-scheduler"})
    run = InProcess(tmp_path, campaign(option(2, "overlap-scheduler")), "autonomous", server)
    snapshot = run.start()
    assert not snapshot.interrupts and not snapshot.next

    stress = run.events("stress.result", option=2)
    assert [(s["outcome"], s["killed"]) for s in stress] == [("wedge", True), ("wedge", True)]
    # The deadline's hook ran before the "kill", as on a real host: a diagnosis of each hung run.
    assert len(run.events("stress.diagnosis", option=2)) == 2 and len(run.mock.sent(" dump")) == 2
    (assessment,) = run.events("assessment", option=2)
    assert (assessment["verdict"], assessment["recommendation"]) == ("unsafe", "skip")
    assert ("safety", "skip", "policy:skip-unsafe") in run.gates(snapshot)
    assert not run.events("kept")
    (rollback,) = run.events("rollback", option=2)
    assert rollback["verified"] is True and rollback["state_ok"] is True

    # The mock saw the revert on both hosts after the last stress run, then the check saying "off".
    last_stress = last_index(run.mock, " stress ", "gpu-a")
    for host in ("gpu-a", "gpu-b"):
        reverted = last_index(run.mock, "revert overlap-scheduler", host)
        assert reverted > last_stress
        assert last_index(run.mock, "check overlap-scheduler", host) > reverted
    assert run.server.on == {"gpu-a": set(), "gpu-b": set()}
    reverts = run.events("command.started", purpose="revert", option=2)
    assert {e["host"] for e in reverts} == {"gpu-a", "gpu-b"} and all(e["effect"] == "revert" for e in reverts)

    view = run.view()
    o = view.options[2]
    assert (o.outcome, o.verdict) == ("skipped", "unsafe")
    assert o.rollback is not None and o.rollback.verified
    assert [s.outcome for s in o.stress] == ["wedge", "wedge"]


def test_a_gate_pauses_under_ask_everything_and_resumes_from_the_in_memory_checkpoint(tmp_path: Path) -> None:
    brain = ScriptedBrain(interpret={"g3": Decision(action="skip")})  # "skip it" at the safety gate, scripted
    server = TinyServer({"moe-occupancy": 1.2})
    run = InProcess(
        tmp_path, campaign(option(3, "moe-occupancy")), "ask-everything", server, brain=brain, headless=False
    )

    paused = run.start()
    assert paused.next == ("triage_gate",)
    _, gate = run.gate()
    assert (gate.id, gate.kind) == ("g2", "triage")
    assert run.gates(paused) == [("plan", "approve", "policy:nothing-to-approve")]
    assert not run.mock.sent("apply ") and not run.events("phase", phase="apply")  # nothing changed yet
    asked = len(run.mock.requests)

    paused = run.decide("continue")  # read by the fallback RuleBrain's grammar
    assert paused.next == ("safety_gate",)
    _, gate = run.gate()
    assert (gate.id, gate.kind, gate.option, gate.facts["verdict"]) == ("g3", "safety", 3, "safe")
    assert run.mock.requests[asked].command.endswith("apply moe-occupancy")  # the resume picked up there
    assert len(run.events("ab.result", option=3)) == 1 and not run.events("kept") and not run.events("rollback")

    done = run.decide("skip it")
    assert not done.interrupts and not done.next
    assert run.gates(done) == [
        ("plan", "approve", "policy:nothing-to-approve"),
        ("triage", "continue", "human:tester"),
        ("safety", "skip", "human:tester"),
        ("continue_or_ask", "stop", "policy:finish-when-done"),
    ]
    (rollback,) = run.events("rollback", option=3)
    assert rollback["verified"] is True and run.server.on == {"gpu-a": set(), "gpu-b": set()}
    assert not run.events("kept")
    (report,) = run.events("report")
    assert report["kept"] == [] and [o["outcome"] for o in report["options"]] == ["skipped"]

    interpreted = brain.calls_to("interpret")
    assert [(c.args[1].id, c.scripted) for c in interpreted] == [("g2", False), ("g3", True)]
    assert interpreted[1].result.raw == "skip it"
    assert run.view().options[3].outcome == "skipped"
