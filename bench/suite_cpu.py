"""Where the test suite's CPU goes: per file and per test, its own and its processes' (not part of `make bench`).

`make test` is CPU-bound on two cores (six workers, ~1,400 s of CPU in ~830 s), so what makes it slow is CPU, and
pytest's --durations (wall time, inflated by whatever else runs) cannot say whose. This runs the suite as `make test`
does, with two additions: a plugin records each test's worker, start, end and in-process CPU, and the kernel's
process accounting (acct(2), root only) records every process that ends (pid, parent, start, elapsed, CPU, name).
Each process is then charged to the test its worker was running when it ended, through its chain of parents
(a daemon that left its parent is listed apart). Run as root:

    .venv/bin/python bench/suite_cpu.py [pytest arguments, default: the whole suite as make test runs it]

Prints the CPU of the processes by kind, the 40 files and the 40 tests that cost the most. A pid reused during the
run can charge a process to the wrong test; the totals by kind do not depend on it.
"""

from __future__ import annotations

import bisect
import collections
import ctypes
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# struct acct_v3 (linux/acct.h): flag, version, tty, exitcode, uid, gid, pid, ppid, btime, etime (float, ticks),
# utime, stime, mem, io, rw, minflt, majflt, swaps (comp_t each), comm[16]
ACCT_V3 = struct.Struct("<ccHIIIIIIf8H16s")
TICKS = 100  # AHZ

PLUGIN = """
import json, os, resource, time
import pytest

def _cpu():
    s = resource.getrusage(resource.RUSAGE_SELF)
    return s.ru_utime + s.ru_stime

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    c0, a0 = _cpu(), time.time()
    yield
    c1, a1 = _cpu(), time.time()
    with open(os.path.join(os.environ["SUITE_CPU_DIR"], f"{os.getpid()}.jsonl"), "a") as fh:
        fh.write(json.dumps({"id": item.nodeid, "self": c1 - c0, "start": a0, "end": a1, "pid": os.getpid()}) + "\\n")
"""


def comp_t(value: int) -> float:
    """A comp_t (13-bit mantissa, 3-bit base-8 exponent) in seconds."""
    return ((value & 0x1FFF) << (3 * ((value >> 13) & 7))) / TICKS


def read_accounting(path: Path) -> list[dict[str, Any]]:
    """Every process that ended, in the order they ended. Not keyed by pid: a suite starts more processes than
    pid_max, so pids are reused and a dict would keep only the last of each (it lost a third of the CPU)."""
    procs: list[dict[str, Any]] = []
    data = path.read_bytes()
    for offset in range(0, len(data) - ACCT_V3.size + 1, ACCT_V3.size):
        f = ACCT_V3.unpack_from(data, offset)
        pid, ppid, btime, etime = f[6], f[7], f[8], f[9]
        procs.append(
            {
                "pid": pid,
                "ppid": ppid,
                "start": btime,  # whole seconds
                "end": btime + etime / TICKS,
                "cpu": comp_t(f[10]) + comp_t(f[11]),
                "comm": f[-1].split(b"\0")[0].decode(errors="replace"),
            }
        )
    return procs


def main(args: list[str]) -> int:
    if os.geteuid() != 0:
        print("process accounting (acct(2)) needs root", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="suite-cpu-"))
    (work / "suite_cpu_plugin.py").write_text(PLUGIN)
    accounting = work / "pacct"
    accounting.touch()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(str(accounting).encode()) != 0:
        print(f"acct: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 2
    env = {**os.environ, "SUITE_CPU_DIR": str(work), "PYTHONPATH": str(work)}
    pytest_args = args or ["-q", "-n", "6", "--dist", "loadgroup"]
    try:
        code = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "suite_cpu_plugin", *pytest_args], cwd=ROOT, env=env
        ).returncode
    finally:
        libc.acct(None)
    tests = [json.loads(line) for f in work.glob("*.jsonl") for line in f.read_text().splitlines()]
    report(tests, read_accounting(accounting))
    shutil.rmtree(work)  # the accounting file: 64 bytes a process, ~2 MB a suite
    return code


def report(tests: list[dict[str, Any]], procs: list[dict[str, Any]]) -> None:
    by_worker: dict[int, list[dict[str, Any]]] = collections.defaultdict(list)
    for t in tests:
        by_worker[t["pid"]].append(t)
    starts = {}
    for pid, rows in by_worker.items():
        rows.sort(key=lambda t: t["start"])
        starts[pid] = [t["start"] for t in rows]
    # The workers end last, so each is the last record of its pid; a worker's pid cannot be reused while it runs.
    workers = {p["pid"]: p for p in procs if p["pid"] in by_worker}
    lives: dict[int, list[dict[str, Any]]] = collections.defaultdict(list)  # every life of a pid, by when it ended
    for p in procs:
        lives[p["pid"]].append(p)

    def parent(p: dict[str, Any]) -> dict[str, Any] | None:
        """The life of p's parent pid that was running when p ended (it was p's parent then)."""
        for life in lives.get(p["ppid"], ()):
            if life["start"] - 1 <= p["end"] <= life["end"] + 1:
                return life
        return None

    def worker_of(p: dict[str, Any]) -> int | None:
        for _ in range(64):  # a chain of parents, bounded
            if p["ppid"] in by_worker:
                return p["ppid"]
            up = parent(p)
            if up is None:
                return None
            p = up
        return None

    per_test: collections.Counter[str] = collections.Counter({t["id"]: t["self"] for t in tests})
    kinds: collections.Counter[str] = collections.Counter()
    apart: collections.Counter[str] = collections.Counter()  # a daemon that left its parent, or not the suite's
    for p in procs:
        if workers.get(p["pid"]) is p:
            continue  # a worker's own CPU is in its tests' "self"
        kind = p["comm"] + (" <50 ms" if p["cpu"] < 0.05 else " <1 s" if p["cpu"] < 1 else " ≥1 s")
        worker = worker_of(p)
        if worker is None:
            apart[p["comm"]] += p["cpu"]
            continue
        kinds[kind] += p["cpu"]
        i = max(0, bisect.bisect_right(starts[worker], p["end"]) - 1)
        per_test[by_worker[worker][i]["id"]] += p["cpu"]
    per_file: collections.Counter[str] = collections.Counter()
    for test, cpu in per_test.items():
        per_file[test.split("::")[0]] += cpu
    total = sum(per_test.values())
    own = sum(t["self"] for t in tests)
    print(f"\n{len(tests)} tests, {total:.0f} s of CPU charged to them (the workers' own: {own:.0f} s)")
    # A worker's CPU outside its tests: starting, collecting, and what runs between tests (fixture finalizers of
    # the session's servers, xdist's messaging). The accounting record of the worker itself has all of it.
    workers_total = sum(p["cpu"] for p in workers.values())
    everything = sum(p["cpu"] for p in procs)
    print(
        f"the workers outside their tests: {workers_total - own:.0f} s; every process that ended during the run: "
        f"{everything:.0f} s"
    )
    shown = ", ".join(f"{name} {cpu:.0f} s" for name, cpu in apart.most_common(6))
    print(f"processes no worker started (daemons that left their parent, anything else on the machine): {shown}")
    print("\nthe tests' processes by name and size (CPU s):")
    for kind, cpu in kinds.most_common(15):
        print(f"  {cpu:8.1f}  {kind}")
    print("\nfiles (CPU s):")
    for name, cpu in per_file.most_common(40):
        print(f"  {cpu:8.1f}  {name}")
    print("\ntests (CPU s):")
    for name, cpu in per_test.most_common(40):
        print(f"  {cpu:8.1f}  {name}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
