#!/usr/bin/env python3
"""simserve: a simulated LLM decode server for the signoff demo (stdlib only, runs on any host).

The server's state is `server.json` in the host's working directory; `apply`/`revert` change it,
`health` checks it, `bench` prints a vLLM `--save-result`-shaped JSON and `stress` runs a stress
scenario (and, like a real wedged engine, may simply never return).

Model (decode-bound, from the campaign's bottleneck facts):
  step time      = 18 ms + 1.05 ms × concurrency          (baseline)
  output tok/s   = concurrency / step time
  overlap scheduler      hides the CPU scheduling part of the step (≈ 6 % of it);
                         but without the TP barrier an abort can leave ranks in different batches
                         (a wedge), and idle/busy bursts drain at a fraction of the rate (saturated)
  MoE/attention occupancy raises kernel occupancy: ≈ 17 % shorter steps
  CUDA graphs / async output each hide half the host-side launch overhead (10 % of a step); they hide mostly
                         the same part, so together they save 12 %, not 19 % (a planted interaction)
  two-batch overlap      needs expert parallelism (ep_size > 1), which this deployment lacks
Run-to-run noise is ~2 % (log-normal), drawn from a seeded RNG advanced per call, so a demo is
reproducible while every number is still a noisy measurement.
"""

from __future__ import annotations

import math
import os
import sys
import time
from types import SimpleNamespace as Args

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: the checkers read the name
if TYPE_CHECKING:
    import random  # at run time only where a run draws (rng), as that import is ~1.4 ms of a ~16 ms run

try:
    # CPython's own JSON scanner and encoder, without the `json` package around them: the package imports `re` and
    # `enum`, a third of this script's start, and a demo runs the script a few hundred times (the tests, 11,000).
    from _json import encode_basestring_ascii, make_encoder, make_scanner
except ImportError:  # a Python without them: the package
    import json

    make_scanner = None


class _Decoding:
    """What the C scanner reads off its decoder: `json.JSONDecoder()`'s defaults."""

    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int, parse_constant = float, int, float  # float("-Infinity"), float("NaN") as json reads them


def _unencodable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def loads(text: str) -> object:
    if make_scanner is None:
        return json.loads(text)
    text = text.strip(" \t\n\r")  # JSON's whitespace, as json.loads skips it (not str.strip()'s)
    try:
        value, end = make_scanner(_Decoding)(text, 0)
    except StopIteration:
        end = -1
    if end != len(text):
        raise ValueError("not one JSON value")
    return value


def dumps(value: object, sort_keys: bool = False) -> str:
    """`json.dumps(value, sort_keys=…)`, byte for byte."""
    if make_scanner is None:
        return json.dumps(value, sort_keys=sort_keys)
    encode = make_encoder(None, _unencodable, encode_basestring_ascii, None, ": ", ", ", sort_keys, False, True)
    return "".join(encode(value, 0))


STATE = "server.json"
FEATURES = {
    "overlap-scheduler": ("overlap_scheduler", True, False),
    "moe-occupancy": ("moe_occupancy", "tuned", "default"),
    "two-batch-overlap": ("two_batch_overlap", True, False),
    # Two ways to hide the same host-side launch overhead (a shared bottleneck: together no better than either)
    "cuda-graphs": ("cuda_graphs", True, False),
    "async-output": ("async_output", True, False),
}
LAUNCH_SHARE = 0.20  # host-side kernel launch and output processing: a fifth of a decode step
LAUNCH_HIDDEN = {1: 0.5, 2: 0.6}  # what one of the two options hides of it, and what both together do
BASELINE = {
    "overlap_scheduler": False,
    "moe_occupancy": "default",
    "two_batch_overlap": False,
    "cuda_graphs": False,
    "async_output": False,
    "ep_size": 1,
    "tp_size": 8,
    "seed": 3,
    "calls": 0,
}

SCHEDULER_SRC = '''\
class OverlapScheduler:
    """Launches batch N+1 on the CPU while the GPU runs batch N."""

    def step(self, batch):
        self.prepare_next(batch)          # no TP barrier: ranks may diverge after aborts
        return self.launch(batch)


class Scheduler:
    def step(self, batch):
        self.tp_barrier()                 # all TP ranks agree on the batch before launch
        return self.launch(batch)
'''
MODEL_SRC = """\
class DecoderLayer:
    def forward(self, hidden, moe, attn):
        # expert parallel dispatch is not wired: ep_group is None when ep_size == 1
        return moe(attn(hidden))
"""


def load() -> dict:
    if not os.path.exists(STATE):
        sys.exit("simserve: no server.json here; run `simserve.py init` first")
    with open(STATE) as fh:
        text = fh.read()
    try:
        state = loads(text)
    except ValueError:
        state = None
    if not isinstance(state, dict):
        sys.exit("simserve: server.json is not a JSON object; run `simserve.py init` again")
    return state


def save(state: dict) -> None:
    with open("server.tmp", "w") as fh:
        fh.write(dumps(state, sort_keys=True))
    os.replace("server.tmp", STATE)


def rng(state: dict, salt: str) -> random.Random:
    """A fresh stream per call: reproducible for a given call order, independent across calls."""
    import random  # only `bench` and `stress` draw: a third of the runs

    state["calls"] += 1
    save(state)
    return random.Random(f"{state['seed']}:{salt}:{state['calls']}")


def slowing(state: dict) -> bool:
    """Is a stress's slow aftermath (`stress --slow-after`) still on for this run?"""
    slow = state.get("slow") or {}
    if not slow.get("left"):
        return False
    if slow.get("if"):
        key, value_on, _ = FEATURES[slow["if"]]
        return state[key] == value_on
    return True


def stress_rng(state: dict, scenario: str) -> random.Random:
    """The nth run of a stress scenario draws from its own stream, so how many benchmark runs came before it (an A/B
    that stopped early, a check that ran more) does not decide whether it wedges; with seed 3 the demo's overlap
    scheduler wedges once in its three abort-cascade runs, whichever option goes first."""
    import random

    rng(state, f"stress-{scenario}")  # advances the call count a drift follows
    runs = state.setdefault("stress_runs", {})
    runs[scenario] = runs.get(scenario, 0) + 1
    save(state)
    return random.Random(f"{state['seed']}:stress-{scenario}-run{runs[scenario]}")


def step_ms(state: dict, concurrency: int) -> float:
    step = 18.0 + 1.05 * concurrency
    if state["overlap_scheduler"]:
        step *= 0.94
    if state["moe_occupancy"] == "tuned":
        step *= state.get("occupancy_effect", 0.83)  # another GPU generation may gain less, or lose
    hiding = sum(bool(state.get(k)) for k in ("cuda_graphs", "async_output"))
    if hiding:  # each alone shortens the step by 10 %; both together by 12 %, not 19 %: they hide the same overhead
        step *= 1 - LAUNCH_SHARE * LAUNCH_HIDDEN[hiding]
    if state.get("degraded"):
        step *= 1.25  # e.g. KV blocks leaked by aborted requests: fewer fit, smaller batches
    slow = state.get("slow") or {}
    if slowing(state):
        # The aftermath of a stress run (crash recovery, a vacuum backlog, cold caches): slower for a few
        # runs, fading out; nothing an option or a revert did — unless `if` names the option whose own state
        # the stress left slow (its revert undoes it).
        step *= 1 + slow["pct"] / 100 * slow["left"] / slow["of"]
    near = state.get("neighbour") or {}
    if near.get("pct") and near["from"] <= state["calls"] < near["from"] + near["calls"]:
        # A neighbour's load on the shared machine for a window of calls: every run is slower, whichever option is
        # on (both arms of any comparison alike); nothing an option, a revert or a stress did.
        step *= 1 + near["pct"] / 100
    if state.get("drift_pct"):
        # A machine that drifts: throughput moves linearly by drift_pct over drift_calls calls, then stays.
        done = min(state["calls"] / max(state.get("drift_calls", 1), 1), 1.0)
        step /= 1 + state["drift_pct"] / 100 * done
    return step


def cmd_init(args: Args) -> None:
    save(
        {
            **BASELINE,
            "seed": args.seed,
            "occupancy_effect": args.occupancy_effect,
            "drift_pct": args.drift_pct,
            "drift_calls": args.drift_calls,
            "neighbour": {"pct": args.neighbour_pct, "from": args.neighbour_from, "calls": args.neighbour_calls},
        }
    )
    os.makedirs("src", exist_ok=True)
    for name, text in (("scheduler.py", SCHEDULER_SRC), ("decoder.py", MODEL_SRC)):
        with open(os.path.join("src", name), "w") as fh:
            fh.write(text)
    print(f"initialised baseline server state (seed {args.seed})")


def cmd_apply(args: Args, on: bool = True) -> None:
    state = load()
    key, value_on, value_off = FEATURES[args.feature]
    if key == "two_batch_overlap" and on and state["ep_size"] <= 1:
        sys.exit("simserve: refusing two-batch overlap without expert parallelism")
    state[key] = value_on if on else value_off
    save(state)
    print(f"{args.feature}: {'on' if on else 'off'} ({key}={state[key]!r})")


def cmd_check(args: Args) -> None:
    """Exit 0 when the feature is on, 1 when it is off: how signoff tells whether a cut-short apply took."""
    state = load()
    key, value_on, _ = FEATURES[args.feature]
    print(f"{args.feature}: {'on' if state[key] == value_on else 'off'}")
    sys.exit(0 if state[key] == value_on else 1)


def cmd_leakcheck(_: Args) -> None:
    """Like scraping /metrics after the load drained: running, waiting and KV usage back to idle?
    (`health` keeps saying ok: real health endpoints lie about this.)"""
    state = load()
    if state.get("degraded"):
        sys.exit("kv_cache_usage_perc=0.31 with num_requests_running=0: 212 KV blocks leaked")
    print("kv_cache_usage_perc=0.00 num_requests_running=0 num_requests_waiting=0")


def cmd_health(_: Args) -> None:
    state = load()
    if state.get("dead"):
        sys.exit("connection refused: the server is gone (its engine died under load)")
    print(dumps({"status": "ok", "config": {k: state[k] for k in FEATURES_KEYS}}))


FEATURES_KEYS = [v[0] for v in FEATURES.values()]


def cmd_show(_: Args) -> None:
    state = load()
    print(dumps({k: state[k] for k in [*FEATURES_KEYS, "ep_size", "tp_size"]}, sort_keys=True))


def cmd_probe(args: Args) -> None:
    state = load()
    if args.what == "ep":
        print(f"ep_size={state['ep_size']} tp_size={state['tp_size']}")
        if state["ep_size"] <= 1:
            print("requires expert parallelism (ep_size=1); decoder layers not wired for TBO", file=sys.stderr)
            sys.exit(3)
    elif args.what == "gpu":
        print("8x simulated H100 80GB, driver 570.86, all healthy")


def cmd_bench(args: Args) -> None:
    state = load()
    r = rng(state, "bench")
    step = step_ms(state, args.concurrency) * math.exp(r.gauss(0.0, args.noise)) / _jump(state, args)
    if slowing(state):
        state["slow"]["left"] -= 1
        save(state)
    time.sleep(args.wall)
    out_tokens = args.num_prompts * args.output_len
    tok_s = args.concurrency / (step / 1000.0)
    duration = out_tokens / tok_s
    tpot = step * (1 + abs(r.gauss(0, 0.01)))
    failed = _failed_requests(state, args)
    completed = args.num_prompts - failed
    result = {
        "date": time.strftime("%Y%m%d-%H%M%S"),
        "endpoint_type": "openai",
        "backend": "vllm",
        "label": "simserve",
        "model_id": "sim/DeepSeek-V3-sim",
        "tokenizer_id": "sim/DeepSeek-V3-sim",
        "num_prompts": args.num_prompts,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": args.concurrency,
        "duration": duration,
        "completed": completed,
        "failed": failed,
        "total_input_tokens": args.num_prompts * 1024,
        "total_output_tokens": completed * args.output_len,
        "request_throughput": completed / duration,
        "request_goodput": None,
        "output_throughput": tok_s * completed / args.num_prompts,  # like vLLM: successful requests' tokens only
        "total_token_throughput": tok_s + args.num_prompts * 1024 / duration,
        "max_output_tokens_per_s": tok_s * 1.08,
        "max_concurrent_requests": args.concurrency,
        "mean_ttft_ms": 410.0 + r.gauss(0, 8),
        "median_ttft_ms": 395.0,
        "p99_ttft_ms": 920.0 + r.gauss(0, 20),
        "mean_tpot_ms": tpot,
        "median_tpot_ms": tpot * 0.998,
        "p99_tpot_ms": tpot * 1.07,
        "mean_itl_ms": tpot,
        "median_itl_ms": tpot * 0.99,
        "p99_itl_ms": tpot * 1.6,
    }
    if failed:  # vLLM's per-request error texts, "" for a request that succeeded
        result["errors"] = [""] * completed + [STREAM_ERROR] * failed
    print(f"simserve bench: concurrency={args.concurrency} prompts={args.num_prompts}", file=sys.stderr)
    print(dumps(result))


STREAM_ERROR = "stream parse error: Expecting ',' delimiter: line 1 column 58 (char 57) in a server-sent event"


def _failed_requests(state: dict, args: Args) -> int:
    """`--fail N` requests of the run fail with a client error: in every run, or only while `--fail-if` FEATURE is
    on, and only in the first `--fail-runs` such runs (0: all of them)."""
    if not args.fail:
        return 0
    if args.fail_if:
        key, value_on, _ = FEATURES[args.fail_if]
        if state[key] != value_on:
            return 0
    if args.fail_runs:
        done = state.get("failing_runs", 0)
        if done >= args.fail_runs:
            return 0
        state["failing_runs"] = done + 1
        save(state)
    return min(args.fail, args.num_prompts)


def _jump(state: dict, args: Args) -> float:
    """`--jump-pct P --jump-if FEATURE --jump-runs 2,3`: those runs of the ones with FEATURE on (counted from 1) are
    P % faster — an effect that shows only in some runs, which two such runs agree on."""
    if not args.jump_pct or not args.jump_if:
        return 1.0
    key, value_on, _ = FEATURES[args.jump_if]
    if state[key] != value_on:
        return 1.0
    seen = state["jump_seen"] = state.get("jump_seen", 0) + 1
    save(state)
    runs = {int(x) for x in args.jump_runs.split(",") if x.strip()}
    return 1 + args.jump_pct / 100 if seen in runs else 1.0


def cmd_stress(args: Args) -> None:
    state = load()
    r = stress_rng(state, args.scenario)
    time.sleep(args.wall)
    print(f"{args.scenario}: sent {args.requests} requests", flush=True)
    if args.neighbour_runs:
        # A neighbour's load arrives with the stress and stays for the next N calls (the post-stress check, a
        # rollback's verification): the machine is slower in every configuration for that long.
        state["neighbour"] = {"pct": args.neighbour_pct, "from": state["calls"] + 1, "calls": args.neighbour_runs}
        save(state)
    if args.slow_after:
        state["slow"] = {"left": args.slow_after, "of": args.slow_after, "pct": args.slow_pct, "if": args.slow_if}
        save(state)
    if args.die:
        # The engine dies under the load; the client, like many, waits on its open streams in silence.
        state["dead"] = True
        save(state)
        while True:
            time.sleep(3600)
    drain_s = args.drain_s
    if args.scenario == "idle-busy-bursts" and state["overlap_scheduler"] and not drain_s:
        # The overlap scheduler's CPU side backs off while idle and restarts slowly into each burst: every
        # request completes, at a fraction of the rate, so the client keeps printing well past any deadline.
        drain_s = args.burst_drain_s
    if drain_s:
        # Saturated: the server keeps answering, just too slowly; the client reports its progress.
        for i in range(int(drain_s * 10)):
            print(f"{args.scenario}: {i + 1} responses drained", flush=True)
            time.sleep(0.1)
    if args.scenario == "abort-cascade":
        print(f"aborted {args.requests // 2} in flight", flush=True)
        # Without the TP barrier, ranks that aborted different requests launch different batches
        # and the next collective never completes: the engine hangs with no error.
        if state["overlap_scheduler"] and r.random() < args.wedge_rate:
            print(
                "decode step 4812: waiting on all-reduce (rank 3 in batch 911, rank 5 in batch 912)",
                flush=True,
            )
            while True:
                time.sleep(3600)
    if args.crash:
        # What vLLM prints when the engine core dies under the load client, which still exits 0.
        print(
            "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace "
            "(above) for the root cause.",
            flush=True,
        )
        return
    if args.degrade:
        state = load()
        state["degraded"] = True
        save(state)
        print(f"{args.scenario}: drained, 0 running, 0 waiting, kv usage 31% above baseline", flush=True)
        return
    print(f"{args.scenario}: drained, 0 running, 0 waiting, kv usage back to baseline", flush=True)


def cmd_dump(_: Args) -> None:
    """What `py-spy dump` of a wedged scheduler looks like; captured before the hung process is killed."""
    state = load()
    hung = state["overlap_scheduler"]
    print("Process 4812: python -m sglang.launch_server (simulated)")
    for rank in range(state["tp_size"]):
        where = (
            (
                "all_reduce (torch/distributed/distributed_c10d.py:2501)"
                if hung and rank in (3, 5)
                else "copy_done.synchronize (scheduler.py:1187)"
            )
            if hung
            else "event_loop_overlap (scheduler.py:902)"
        )
        print(f"Thread rank{rank} (active): {where}")


# Every subcommand's arguments, once: (name, type, default, choices, help). A name with "--" is an option
# (type bool: a flag), one without a positional. `main` reads a well-formed command line from this table
# directly, and hands anything else (`--help`, a mistake, an abbreviation) to an argparse parser built from
# the same table: the demo runs this script thousands of times, and argparse alone would be half its start.
FEATURE_CHOICES = sorted(FEATURES)
COMMANDS: dict[str, list[tuple[str, type, object, list[str] | None, str | None]]] = {
    "init": [
        ("--seed", int, 3, None, None),
        ("--occupancy-effect", float, 0.83, None, "step-time factor of tuned occupancy"),
        ("--drift-pct", float, 0.0, None, "throughput drifts by this much over the run"),
        ("--drift-calls", int, 100, None, "… reaching it after this many bench/stress calls"),
        ("--neighbour-pct", float, 0.0, None, "a neighbour's load slows every run by this much"),
        ("--neighbour-from", int, 1, None, "… from this bench/stress call (1: the first)"),
        ("--neighbour-calls", int, 0, None, "… for this many calls"),
    ],
    **{name: [("feature", str, None, FEATURE_CHOICES, None)] for name in ("apply", "revert", "check")},
    "health": [],
    "show": [],
    "dump": [],
    "leakcheck": [],
    "probe": [("what", str, None, ["ep", "gpu"], None)],
    "bench": [
        ("--concurrency", int, 90, None, None),
        ("--num-prompts", int, 900, None, None),
        ("--output-len", int, 256, None, None),
        ("--noise", float, 0.02, None, None),
        ("--wall", float, 0.25, None, "real seconds one run takes"),
        ("--fail", int, 0, None, "this many requests of a run fail (a client error)"),
        ("--fail-if", str, None, FEATURE_CHOICES, "… only while this feature is on"),
        ("--fail-runs", int, 0, None, "… only in the first N such runs (0: every one)"),
        ("--jump-pct", float, 0.0, None, "some runs with a feature on are this much faster"),
        ("--jump-if", str, None, FEATURE_CHOICES, "… the feature"),
        ("--jump-runs", str, "", None, "… which of its runs, counted from 1 (e.g. 2,3)"),
    ],
    "stress": [
        ("scenario", str, None, ["abort-cascade", "idle-busy-bursts"], None),
        ("--requests", int, 200, None, None),
        ("--wall", float, 0.2, None, None),
        ("--wedge-rate", float, 0.55, None, "chance a desynced abort hangs the engine"),
        ("--degrade", bool, False, None, "leave the server slower afterwards (a leak)"),
        ("--drain-s", float, 0.0, None, "drain slowly for this long, printing progress"),
        ("--burst-drain-s", float, 4.0, None, "idle-busy-bursts under the overlap scheduler drain this long"),
        ("--die", bool, False, None, "the server dies under the load (health fails from then)"),
        ("--slow-after", int, 0, None, "the next N benchmark runs are slower, fading out"),
        ("--slow-pct", float, 40.0, None, "… by up to this much (step time)"),
        ("--slow-if", str, None, FEATURE_CHOICES, "… only the runs with this feature on (its own state)"),
        ("--crash", bool, False, None, "the engine dies under load (the client exits 0)"),
        ("--neighbour-runs", int, 0, None, "a neighbour's load for the next N calls, any config"),
        ("--neighbour-pct", float, 30.0, None, "… slowing every run by this much (step time)"),
    ],
}


def negative_number(token: str) -> bool:
    """What argparse takes for a negative number, not an option: `-\\d+|-\\d*\\.\\d+` (without importing `re`)."""
    whole, dot, fraction = token[1:].partition(".")
    ascii_digits = "0123456789".__contains__
    if not token.startswith("-") or not all(map(ascii_digits, whole + fraction)):
        return False
    return bool(fraction) if dot else bool(whole)


def _dest(name: str) -> str:
    return name.lstrip("-").replace("-", "_")


def parse_quickly(argv: list[str]) -> Args | None:
    """The arguments of a well-formed command line, or None for anything argparse should read instead."""
    if not argv or argv[0] not in COMMANDS:
        return None
    spec = COMMANDS[argv[0]]
    values = {_dest(name): default for name, _, default, _, _ in spec}
    options = {name: (kind, choices) for name, kind, _, choices, _ in spec if name.startswith("--")}
    positionals = [(name, kind, choices) for name, kind, _, choices, _ in spec if not name.startswith("--")]
    rest = iter(argv[1:])
    for token in rest:
        if token.startswith("-"):
            name, eq, value = token.partition("=")
            if name not in options:
                return None
            kind, choices = options[name]
            if kind is bool:
                if eq:
                    return None
                values[_dest(name)] = True
                continue
            if not eq:
                following = next(rest, None)
                if following is None or (following.startswith("-") and not negative_number(following)):
                    return None
                value = following
        elif positionals:
            name, kind, choices = positionals.pop(0)
            value = token
        else:
            return None
        try:
            typed = kind(value)
        except ValueError:
            return None
        if choices is not None and typed not in choices:
            return None
        values[_dest(name)] = typed
    return None if positionals else Args(cmd=argv[0], **values)


def parse_fully(argv: list[str]) -> Args:
    """argparse over the same table: its help, its abbreviations and its one-line errors (exit 2)."""
    import argparse

    ap = argparse.ArgumentParser(prog="simserve.py", description=(__doc__ or "").splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for command, spec in COMMANDS.items():
        p = sub.add_parser(command)
        for name, kind, default, choices, help_ in spec:
            if kind is bool:
                p.add_argument(name, action="store_true", help=help_)
            elif name.startswith("--"):
                p.add_argument(name, type=kind, default=default, choices=choices, help=help_)
            else:
                p.add_argument(name, choices=choices, help=help_)
    return Args(**vars(ap.parse_args(argv)))


def main() -> None:
    args = parse_quickly(sys.argv[1:]) or parse_fully(sys.argv[1:])
    if args.cmd == "init":
        cmd_init(args)
    elif args.cmd == "apply":
        cmd_apply(args, on=True)
    elif args.cmd == "revert":
        cmd_apply(args, on=False)
    elif args.cmd == "check":
        cmd_check(args)
    elif args.cmd == "health":
        cmd_health(args)
    elif args.cmd == "show":
        cmd_show(args)
    elif args.cmd == "probe":
        cmd_probe(args)
    elif args.cmd == "bench":
        cmd_bench(args)
    elif args.cmd == "stress":
        cmd_stress(args)
    elif args.cmd == "dump":
        cmd_dump(args)
    elif args.cmd == "leakcheck":
        cmd_leakcheck(args)


if __name__ == "__main__":
    main()
