"""`signoff check`: everything a run would find out about a campaign before it touches a host.

The campaign and policy are loaded as a run loads them; every SSH host is resolved as the transport
resolves it (`ssh -G`) and its key looked up in the files the transport would read; every command is
rendered per host with the run's own `plan` and classed with the run's own command policy; the gates
the policy leaves to a person are listed with the rule (or missing rule) that leaves them; the number of
benchmark runs and the wall time they may take are counted from the campaign; and measurement settings
too weak to support a verdict are named. Nothing here opens a connection or runs a command on a host.

Errors are what would stop a run at once (a command the policy denies, a missing upload, an SSH host
that does not resolve, a secret not in the environment); warnings are what would stop it later or make
its verdicts weak (a command the policy asks about, an unknown host key, two benchmark pairs).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any, Literal, cast

from agent.campaign import LoadedCampaign, expanded, load_campaign, refuse_literal_secrets, render
from agent.context import RunContext
from agent.exec.planning import command_class, plan, upload_class, upload_command
from agent.models import Campaign, CommandSpec
from agent.run.check_report import CheckedCommand, CheckedHost, CheckFinding, CheckReport, Estimate, GateStop, minutes
from agent.run.create import choose_brain
from agent.run.expected import Expected, Measured, expected, previous
from policies.engine import PolicyEngine
from policies.gates import GATES
from policies.load import load_policy
from policies.schema import Policy, SourceError
from tools.commands import allowed_words
from tools.paired import POST_STRESS_MAX_PAIRS, rollback_pairs
from tools.sequential import FIRST_LOOK, PER_HOST_PAIRS
from tools.transport import Host

CHECK_SESSION = "SESSION"  # what {{session}} reads as here: a run's own id is made when it starts


class _Transport:
    """Where commands would run, without going there: {{workdir}} as the run would make it."""

    def __init__(self, home: Path) -> None:
        self.home = home

    def workdir(self, host: Host) -> str:
        if host.workdir:
            return host.workdir
        if host.transport == "ssh":
            return f"~/signoff/{CHECK_SESSION}/{host.name}"
        return str(self.home / "sessions" / CHECK_SESSION / "hosts" / host.name)


def check(
    campaign_path: Path, policy_ref: str, *, ssh_config: str | None = None, store: str | None = None
) -> CheckReport:
    """The dry run. A campaign or policy that does not load is one error finding (what `run` would say)."""
    report = CheckReport(ok=False, campaign=str(campaign_path), policy=policy_ref)
    try:
        loaded = load_campaign(campaign_path)
        refuse_literal_secrets(loaded)
    except SourceError as exc:
        report.findings.append(_error_of(exc, "campaign"))
        return report
    report.campaign_name = loaded.campaign.name
    try:
        policy = load_policy(policy_ref)
    except SourceError as exc:
        report.findings.append(_error_of(exc, "policy"))
        return report
    report.policy_parts = [p.model_dump() for p in policy.parts]
    c = loaded.campaign
    missing = [n for n in c.secrets if not os.environ.get(n)]
    for name in missing:
        report.findings.append(
            _at(loaded, ("secrets",), "error", f"secret {name} is not in the environment; `run` refuses to start")
        )
    ctx = _context(loaded, policy, missing)
    report.hosts = [_host(loaded, h, ssh_config, report) for h in c.hosts]
    report.commands = _commands(ctx, loaded, policy, report)
    report.gates = _gates(policy, c, report)
    measured, note = _previous(loaded, store)
    report.estimate = estimate(c, measured, note)
    _measurement(loaded, report)
    limit = policy.model.budgets.wall_min
    e = report.estimate
    if limit is not None and e.wall_s_max > limit * 60:
        likely = (
            f"; it is expected to take about {minutes(e.expected_s)}"
            if e.expected_s is not None and e.expected_s > limit * 60
            else ""
        )
        report.gates.append(
            GateStop(
                gate="budget",
                rule=None,
                when=f"wall time past {limit:g} min",
                why=f"the plan may take up to {minutes(e.wall_s_max)} if every command runs to its "
                f"timeout{likely}; the budget gate opens before the next option once the limit is passed",
            )
        )
    report.ok = not report.errors
    return report


def _error_of(exc: SourceError, where: str) -> CheckFinding:
    return CheckFinding(level="error", where=where, file=exc.path, line=exc.line, message=exc.message)


def _at(
    loaded: LoadedCampaign, loc: tuple[str | int, ...], level: Literal["error", "warning"], msg: str
) -> CheckFinding:
    return CheckFinding(
        level=level, where=_dotted(loc), file=str(loaded.path), line=loaded.source.line(loc), message=msg
    )


def _dotted(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _context(loaded: LoadedCampaign, policy: Policy, missing: list[str]) -> RunContext:
    from tools.secrets import is_secret_name

    c = loaded.campaign
    secrets = {n: os.environ.get(n) or "unset" for n in c.secrets}
    secrets |= {k: v for k, v in c.vars.items() if is_secret_name(k)}
    from agent.store.listing import home as store_home

    home = store_home().absolute()
    # Only what `plan` reads is real here; nothing runs, so nothing is journaled or stored.
    return RunContext(
        session=CHECK_SESSION,
        campaign=c,
        campaign_dir=loaded.directory,
        transport=cast(Any, _Transport(home)),
        artifacts=cast(Any, None),
        journal=cast(Any, None),
        policy=policy,
        engine=PolicyEngine(policy),
        brain=cast(Any, None),
        secrets=secrets,
    )


def _host(loaded: LoadedCampaign, host: Host, ssh_config: str | None, report: CheckReport) -> CheckedHost:
    i = loaded.campaign.hosts.index(host)
    if host.transport != "ssh":
        return CheckedHost(name=host.name, transport=host.transport)
    from tools.ssh import KnownHosts, resolve, user_known_hosts

    try:
        endpoint = resolve(host, ssh_config=ssh_config)
    except (OSError, ValueError) as exc:
        report.findings.append(_at(loaded, ("hosts", i), "error", f"{host.name}: cannot resolve: {exc}"))
        return CheckedHost(name=host.name, transport="ssh")
    files = user_known_hosts(host.address or host.name, ssh_config) or [Path("~/.ssh/known_hosts").expanduser()]
    if host.known_hosts:
        kh = Path(host.known_hosts).expanduser()
        files.append(kh if kh.is_absolute() else loaded.directory / kh)
    known = KnownHosts(files, None)
    found = known.keys.lookup(endpoint.known_hosts_name) is not None
    checked = CheckedHost(
        name=host.name,
        transport="ssh",
        address=endpoint.address,
        port=endpoint.port,
        user=endpoint.user,
        host_key="known" if found else "unknown",
        known_hosts=[str(f) for f in files],
    )
    if not found:
        report.findings.append(
            _at(
                loaded,
                ("hosts", i),
                "warning",
                f"{host.name}: no host key for {endpoint.known_hosts_name} in {', '.join(map(str, files))}; a run "
                "refuses to connect until it is added (ssh-keyscan, checked) or --accept-new-host-keys pins it",
            )
        )
    for w in known.warnings:
        report.findings.append(_at(loaded, ("hosts", i), "warning", w))
    return checked


def _specs(c: Campaign) -> list[tuple[tuple[str | int, ...], CommandSpec, bool]]:
    """Every command the campaign can run: (where, spec, read-only by intent)."""
    out: list[tuple[tuple[str | int, ...], CommandSpec, bool]] = []
    out += [(("baseline", "setup", i), s, False) for i, s in enumerate(c.baseline.setup)]
    out += [(("baseline", "health", i), s, True) for i, s in enumerate(c.baseline.health)]
    out += [(("baseline", "alive", i), s, True) for i, s in enumerate(c.baseline.alive)]
    b = c.benchmark
    for name in ("restart", "warmup"):
        if (text := getattr(b, name)) is not None:
            out.append((("benchmark", name), CommandSpec(run=text, on=b.on, timeout=b.timeout), False))
    out.append((("benchmark",), CommandSpec(run=b.run, on=b.on, timeout=b.timeout), False))
    if b.sweep is not None:
        # Every level is its own command line, and the command rules judge each one.
        public = {k: v for k, v in c.vars.items() if k not in c.secrets and k != b.sweep.var}
        for i, level in enumerate(b.sweep.values):
            run = render(expanded(b.run, public), {b.sweep.var: b.sweep.label(level)})
            out.append((("benchmark", "sweep", "values", i), CommandSpec(run=run, on=b.on, timeout=b.timeout), False))
    for i, s in enumerate(c.stress):
        out.append((("stress", i), CommandSpec(run=s.run, on=s.on, timeout=s.timeout), False))
        for name in ("check", "diagnose"):
            if (text := getattr(s, name)) is not None:
                out.append((("stress", i, name), CommandSpec(run=text, on=s.on, timeout=s.timeout), name == "check"))
    for i, o in enumerate(c.options):
        out += [(("options", i, "probes", j), p, True) for j, p in enumerate(o.probes)]
        out += [(("options", i, "apply", j), s, False) for j, s in enumerate(o.apply)]
        out += [(("options", i, "revert", j), s, False) for j, s in enumerate(o.revert)]
        if o.check is not None:
            out.append((("options", i, "check"), o.check, True))
    return out


def _commands(ctx: RunContext, loaded: LoadedCampaign, policy: Policy, report: CheckReport) -> list[CheckedCommand]:
    c = loaded.campaign
    rows: list[CheckedCommand] = []
    for i, up in enumerate(c.baseline.upload):
        dest = up.dest or Path(up.src).name
        loc: tuple[str | int, ...] = ("baseline", "upload", i)
        verdict = upload_class(up.src, dest)
        for host in c.targets(up.on):
            rows.append(_row(loaded, loc, host.name, upload_command(up.src, dest), verdict.klass, verdict, None))
    for loc, spec, readonly_intent in _specs(c):
        try:
            planned = plan(ctx, spec)
        except ValueError as exc:  # a secret value no shell can hold, an unknown role
            report.findings.append(_at(loaded, loc, "error", str(exc)))
            continue
        for p in planned:
            verdict = command_class(ctx, p.command)
            readonly = None
            if readonly_intent:
                try:
                    words = shlex.split(p.command)
                except ValueError:
                    words = []
                readonly = bool(words) and allowed_words(words, policy.model.commands.readonly) is not None
            rows.append(_row(loaded, loc, p.host.name, p.command, verdict.klass, verdict, readonly))
    for i, target in enumerate(c.notify):
        if target.command is None:
            continue
        command = shlex.join(target.command)
        verdict = command_class(ctx, command)
        loc = ("notify", i)
        rows.append(_row(loaded, loc, "this machine", command, verdict.klass, verdict, None))
        if verdict.klass != "allow":
            # Not a gate: a campaign's notify command the policy does not allow is simply not run.
            said = f"notify command `{command}` will not be run: the command policy says {verdict.klass}"
            said += f" ({verdict.reason})" if verdict.reason else ""
            report.findings.append(_at(loaded, loc, "warning", said))
    for row in rows:
        if row.klass == "deny" and not row.where.startswith("notify"):
            report.findings.append(
                CheckFinding(
                    level="error",
                    where=row.where,
                    file=str(loaded.path),
                    line=row.line,
                    message=f"the command policy refuses `{row.command}` on {row.host}: {row.why}",
                )
            )
    return rows


def _row(
    loaded: LoadedCampaign, loc: tuple[str | int, ...], host: str, command: str, klass: str, verdict: Any, ro: Any
) -> CheckedCommand:
    why = verdict.reason or (f"matches allow pattern {verdict.pattern!r}" if verdict.pattern else "")
    if klass == "allow" and not why:
        why = "matches an allow pattern"
    return CheckedCommand(
        where=_dotted(loc),
        line=loaded.source.line(loc),
        host=host,
        command=command,  # secrets are already "$NAME" in a planned command
        klass=cast(Any, klass),
        why=why,
        readonly=ro,
        runs=getattr(verdict, "runs", None) if klass == "allow" else None,
    )


def _gates(policy: Policy, c: Campaign, report: CheckReport) -> list[GateStop]:
    """Where the policy leaves the decision to a person: the command gates this campaign will open for
    certain, the plan gate as it will be decided, and for every other gate the rules that answer `ask`."""
    stops: list[GateStop] = []
    asked = [r for r in report.commands if r.klass == "ask" and not r.where.startswith("notify")]
    for row in asked:
        stops.append(
            GateStop(
                gate="command",
                rule=None,
                when=f"{row.where} on {row.host}",
                why=f"`{row.command}`: {row.why}",
            )
        )
    if asked:
        report.findings.append(
            CheckFinding(
                level="warning",
                where="commands",
                message=f"{len(asked)} command(s) the policy asks about: a headless run pauses (exit 3) at the first "
                "one; allow them in the policy (`extends:` a preset and add `commands: allow:`) or approve them",
            )
        )
    engine = PolicyEngine(policy)
    plan_facts = {"options": len(c.options), "proposed": 0, "reordered": False}
    d = engine.evaluate("plan", plan_facts)
    if d.action == "ask":
        stops.append(GateStop(gate="plan", rule=d.rule, when="the campaign's own plan", why=d.rationale or "asks"))
    budgets = policy.model.budgets
    brain = choose_brain(c.brain, policy, None, None)["kind"]  # as `run` chooses it without --brain
    for kind, spec in GATES.items():
        if spec.checked == "apart" or (spec.checked == "budget" and budgets == type(budgets)()):
            continue  # checked above; or no budget set: the budget gate never opens
        rules = policy.rules.get(kind, [])
        if spec.unnamed is not None and not rules:
            continue  # a kind added after the policy was written: its `unnamed` answer decides, nothing asks
        if spec.checked == "model" and brain != "claude":
            continue  # only a model can be given up (`run --brain claude` can still open it: the check cannot know)
        gate = policy.gate(kind)
        headless = (
            f"; a headless run answers {gate.headless_default} (headless_default) unless the gate is critical"
            if gate.headless_default
            else ""
        )
        for i, rule in enumerate(rules):
            if rule.spec.decide == "ask":
                where = f" ({Path(rule.file).name}:{rule.line})" if rule.file and len(policy.parts) > 1 else ""
                when = rule.spec.when.strip()
                stops.append(
                    GateStop(
                        gate=kind,
                        rule=rule.spec.id,
                        when=("no earlier rule matches" if i else "always") if when == "true" else when,
                        why=(rule.spec.note or "the rule asks") + where + headless,
                    )
                )
        if not any(r.spec.when.strip() == "true" for r in rules):
            why = "no fallback rule: facts no rule covers ask" + headless
            stops.append(GateStop(gate=kind, rule=None, when="no rule matches", why=why))
        if gate.deadline is not None:
            stops.append(
                GateStop(
                    gate=kind,
                    rule=None,
                    when=f"nobody answers in {gate.deadline}",
                    why=f"the gate then answers {gate.on_deadline} (journaled by: deadline)",
                )
            )
    return stops


def _previous(loaded: LoadedCampaign, store: str | None) -> tuple[Measured | None, str | None]:
    """What the newest earlier session of this campaign measured, from the store a run would use."""
    import hashlib

    from agent.store import open_store

    sha = hashlib.sha256(loaded.text.encode()).hexdigest()
    try:
        return previous(open_store(store), loaded.campaign.name, sha)
    except Exception as exc:  # an estimate must not fail the check: an unreadable store leaves the campaign's figures
        return None, f"the store could not be read ({type(exc).__name__}: {str(exc)[:200]})"


def estimate(c: Campaign, measured: Measured | None = None, note: str | None = None) -> Estimate:
    """Benchmark runs and wall time, counted from the campaign: at least `pairs` per option (min(pairs, 3) for a
    sequential A/B) and no
    settling, at most `max_pairs` with every settling run, every command running to its timeout; and
    beside that worst case the expected plan (agent/run/expected.py), from `measured` when given."""
    b, rb = c.benchmark, c.rollback
    setup_s = sum(s.timeout for s in [*c.baseline.setup, *c.baseline.health])
    per_run = b.timeout * (1 + (b.restart is not None) + (b.warmup is not None))
    setup_runs = 2 * b.calibrate_pairs + rb.verify_runs
    n = len(c.options)
    levels = len(b.sweep.values) if b.sweep else 1
    search = b.sweep.search if b.sweep else None
    # A capacity search: each arm at least one probe (it meets at the top), at most `steps`.
    search_min, search_max = (2 * search.runs, 2 * search.steps * search.runs) if search else (0, 0)
    # A sequential A/B may stop at its first look: 3 pairs; 5 on several hosts (each host is judged on its own);
    # a sweep's levels run at least `pairs` (their runs fit the step-time model too).
    fleet = len(c.targets(b.on)) > 1
    first = min(b.pairs, PER_HOST_PAIRS if fleet else FIRST_LOOK) if b.sequential and b.sweep is None else b.pairs
    runs_min = setup_runs + n * (2 * first * levels + search_min)
    stress_s = sum(s.runs * (s.timeout + (30.0 if s.check else 0.0)) for s in c.stress)
    verify_runs_max = rb.verify_runs + rb.settle_runs
    settle_wait = sum(min(b.timeout * 2**k, rb.settle_wait_s) for k in range(rb.settle_runs))
    # The post-stress check's pairs (grown up to POST_STRESS_MAX_PAIRS on a noisy system) and a rollback read slower
    # than the baseline measured paired against the option applied again: two runs and a toggle or so a pair.
    post_pairs = max(b.post_stress_runs, POST_STRESS_MAX_PAIRS) if b.post_stress_runs else 0
    paired = rollback_pairs(rb.verify_runs)
    # The end's confirmation A/Bs (agent/nodes/confirm.py), with every option kept: the final configuration and each
    # later-kept option alone against the start, and with `pairwise` each pair; a switch toggles up to every option.
    confirms = 0 if c.confirm is False or not n else n + (n * (n - 1) // 2 if c.confirm == "pairwise" and n <= 4 else 0)
    runs_max = setup_runs + n * (2 * b.max_pairs * levels + search_max + 2 * post_pairs + verify_runs_max + 2 * paired)
    runs_max += confirms * 2 * b.max_pairs
    toggles_per_option = (
        b.max_pairs * levels + (2 * search.steps if search else 0) + (post_pairs + 1 if post_pairs else 0) + paired + 1
    )
    toggles = n * toggles_per_option + confirms * b.max_pairs * n
    per_option_probe = max((sum(p.timeout for p in o.probes) for o in c.options), default=0.0)
    toggle_s = sum(max(sum(s.timeout for s in o.apply), sum(s.timeout for s in o.revert)) for o in c.options)
    phases = {
        "setup": setup_s + setup_runs * per_run,
        "investigation": per_option_probe * n,
        "benchmark": n * (2 * b.max_pairs * levels + search_max) * per_run + toggle_s * toggles_per_option,
        # toggle_s is every option's toggle once: the toggles of one option each, for all of them
        "stress": n * (stress_s + 2 * post_pairs * per_run) + (post_pairs + 1 if post_pairs else 0) * toggle_s,
        "rollback": (paired + 2) * toggle_s + n * ((verify_runs_max + 2 * paired) * per_run + settle_wait),
        "confirm": confirms * (2 * b.max_pairs * per_run + b.max_pairs * toggle_s),
    }
    likely: Expected = expected(c, measured, note)
    return Estimate(
        benchmark_runs_min=runs_min,
        benchmark_runs_max=runs_max,
        toggles_max=toggles,
        # Measured time between commands (connections, journaling) lies outside every timeout: the worst case
        # is never below what is expected.
        wall_s_max=max(round(sum(phases.values()), 1), likely.total_s),
        by_phase_s={k: round(v, 1) for k, v in phases.items()},
        expected_s=likely.total_s,
        expected_by_phase_s=likely.by_phase_s,
        benchmark_runs_expected=likely.benchmark_runs,
        expected_durations=likely.durations,
        expected_session=likely.session,
        expected_assumes=likely.assumes,
        expected_note=likely.note,
    )


def _measurement(loaded: LoadedCampaign, report: CheckReport) -> None:
    """Settings too weak for the verdicts the run will give, each with what it costs."""
    c = loaded.campaign
    b = c.benchmark
    warn = report.findings.append
    if b.calibrate_pairs < 4:
        warn(
            _at(
                loaded,
                ("benchmark", "calibrate_pairs") if "calibrate_pairs" in b.model_fields_set else ("benchmark",),
                "warning",
                f"calibrate_pairs is {b.calibrate_pairs}: fewer than 4 A/A pairs at setup leave the noise floor to the "
                "A/B's own spread (and rollback bands to the campaign's fixed tolerance when that is thin); use 4-6",
            )
        )
    if b.pairs < 5:
        warn(
            _at(
                loaded,
                ("benchmark", "pairs"),
                "warning",
                f"pairs is {b.pairs}: with fewer than 5 A/B pairs a 95% CI is wide (t = 2.78 at 4 pairs) and small "
                "wins come out inconclusive; use 6 or more",
            )
        )
    if b.max_pairs < b.pairs:
        warn(_at(loaded, ("benchmark", "max_pairs"), "warning", "max_pairs is below pairs: no extension is possible"))
    if not c.stress:
        warn(
            _at(
                loaded,
                ("options",),
                "warning",
                "no stress test: a wedge or crash under load cannot be seen, so `safe` rests on the benchmark alone",
            )
        )
    for i, o in enumerate(c.options):
        hazards = [p for p in o.probes if p.on_fail == "hazard"]
        if hazards and not c.stress:
            warn(
                _at(
                    loaded,
                    ("options", i, "probes"),
                    "warning",
                    f"option #{o.id} has a hazard probe ({hazards[0].name!r}) and no stress test could reproduce it: "
                    "a confirmed hazard alone makes it unsafe",
                )
            )
        if o.check is None:
            warn(
                _at(
                    loaded,
                    ("options", i),
                    "warning",
                    f"option #{o.id} has no `check`: a rollback is verified by the metric alone, and a crash during "
                    "its apply or revert opens the rollback gate",
                )
            )
