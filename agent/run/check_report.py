"""What `signoff check` found, as data (`--json`) and as the lines it prints."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agent.run.expected import Duration


class CheckFinding(BaseModel):
    level: Literal["error", "warning"]
    where: str  # the campaign or policy part, e.g. options[2].probes[0]
    file: str | None = None
    line: int | None = None
    message: str


class CheckedHost(BaseModel):
    name: str
    transport: str
    address: str | None = None
    port: int | None = None
    user: str | None = None
    host_key: Literal["known", "unknown", "not needed"] = "not needed"
    known_hosts: list[str] = Field(default_factory=list)  # the files it was looked up in


class CheckedCommand(BaseModel):
    where: str  # e.g. baseline.setup[0], options[1].apply[0], benchmark, stress[0].check
    line: int | None = None
    host: str
    command: str  # as written in the campaign, rendered for the host; secrets shown as "$NAME"
    klass: Literal["allow", "ask", "deny"]
    why: str  # the pattern or rule that decided
    readonly: bool | None = None  # probes and checks: whether an investigation subagent may run it unasked
    # What the host's bash is given when the policy allows it: the canonical form the policy judged
    # (tools/canonical/), the same as `command` unless its spelling changed. None for `ask` and `deny`: an asked
    # command runs as written once a person approves it.
    runs: str | None = None


class GateStop(BaseModel):
    gate: str
    rule: str | None  # None: no rule covers it, so it asks
    when: str
    why: str


class Estimate(BaseModel):
    benchmark_runs_min: int
    benchmark_runs_max: int
    toggles_max: int  # applies and reverts between A/B arms
    wall_s_max: float  # every command of the plan running to its timeout
    by_phase_s: dict[str, float]
    # The expected plan (agent/run/expected.py): its wall time, per phase, its benchmark runs, the duration of
    # each unit with its source (declared, measured, assumed), the session measured from, and what it assumes.
    expected_s: float | None = None
    expected_by_phase_s: dict[str, float] = Field(default_factory=dict)
    benchmark_runs_expected: int | None = None
    expected_durations: list[Duration] = Field(default_factory=list)
    expected_session: str | None = None
    expected_assumes: list[str] = Field(default_factory=list)
    expected_note: str | None = None  # why no earlier session's measurements were used, when there were sessions


class CheckReport(BaseModel):
    ok: bool  # no errors (warnings allowed)
    campaign: str
    campaign_name: str | None = None
    policy: str | None = None
    policy_parts: list[dict[str, Any]] = Field(default_factory=list)
    hosts: list[CheckedHost] = Field(default_factory=list)
    commands: list[CheckedCommand] = Field(default_factory=list)
    gates: list[GateStop] = Field(default_factory=list)
    estimate: Estimate | None = None
    findings: list[CheckFinding] = Field(default_factory=list)

    @property
    def errors(self) -> list[CheckFinding]:
        return [f for f in self.findings if f.level == "error"]

    @property
    def warnings(self) -> list[CheckFinding]:
        return [f for f in self.findings if f.level == "warning"]


def minutes(seconds: float) -> str:
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def _short(seconds: float) -> str:
    """A unit's duration: tenths below 10 s (a simulated benchmark run takes 0.3 s)."""
    return f"{seconds:.1f} s" if seconds < 10 else minutes(seconds)


def _expected_lines(e: Estimate) -> list[str]:
    """The expected duration, with where each unit's figure came from, before the worst case."""
    if e.expected_s is None:
        return []
    phases = ", ".join(f"{k} {minutes(v)}" for k, v in e.expected_by_phase_s.items())
    head = f"expected: about {minutes(e.expected_s)} ({phases}), {e.benchmark_runs_expected} benchmark runs"
    if e.expected_session:
        head += f"; durations measured in session {e.expected_session} where the campaign declares none"
    out = [head, "  assuming " + "; ".join(e.expected_assumes)]
    for source in ("declared", "measured", "assumed"):
        units = [d for d in e.expected_durations if d.source == source]
        if units:
            said = ", ".join(f"{d.unit} {_short(d.seconds)}" for d in units)
            why = {
                "declared": "typical_s",
                "measured": "an earlier session",
                "assumed": "timeouts where no typical_s",
            }[source]
            out.append(f"  {source} ({why}): {said}")
    if e.expected_note:
        out.append(f"  {e.expected_note}")
    if any(d.source == "assumed" and "timeouts" in d.detail for d in e.expected_durations):
        out.append("  give commands `typical_s`, or run the campaign once: a later check uses what it measured")
    return out


def render_text(report: CheckReport) -> list[str]:
    """The report for a terminal: findings first (file:line: level: message), then what was checked."""
    lines = [
        f"{f.file or report.campaign}{':' + str(f.line) if f.line else ''}: {f.level}: {f.where}: {f.message}"
        for f in report.findings
    ]
    if report.campaign_name is None or report.estimate is None:
        return lines
    lines.append("")
    lines.append(f"campaign {report.campaign_name} ({report.campaign}) under policy {report.policy}")
    if len(report.policy_parts) > 1:
        lines.append("  policy resolved from " + " → ".join(p["path"] for p in report.policy_parts))
    lines.append("hosts:")
    for h in report.hosts:
        if h.transport == "ssh":
            at = f"{h.user + '@' if h.user else ''}{h.address}:{h.port}"
            lines.append(f"  {h.name}: ssh {at}, host key {h.host_key}")
        else:
            lines.append(f"  {h.name}: {h.transport}")
    lines.append("commands:")
    for r in report.commands:
        ro = "" if r.readonly is None else (", read-only" if r.readonly else ", not read-only")
        lines.append(f"  {r.klass:5} {r.where} on {r.host}: {r.command}  [{r.why}{ro}]")
        if r.runs is not None and r.runs != r.command:
            lines.append(f"        runs as: {r.runs}")
    lines.append("gates a person decides:")
    commands = [g for g in report.gates if g.gate == "command"]
    if commands:
        lines.append(
            f"  command: {len(commands)} command(s) above are `ask`; a headless run pauses at the first, "
            + commands[0].when
        )
    for g in report.gates:
        if g.gate != "command":
            when = "always" if g.when == "always" else f"when {g.when}"
            lines.append(f"  {g.gate}: {g.rule or '(no rule)'} {when} — {g.why}")
    e = report.estimate
    lines += _expected_lines(e)
    lines.append(
        f"estimate: {e.benchmark_runs_min}-{e.benchmark_runs_max} benchmark runs, up to {e.toggles_max} toggles; "
        f"at most {minutes(e.wall_s_max)} if every command ran to its timeout ("
        + ", ".join(f"{k} {minutes(v)}" for k, v in e.by_phase_s.items())
        + ")"
    )
    n_err, n_warn = len(report.errors), len(report.warnings)
    lines.append(
        ("OK" if not n_err else "NOT OK")
        + f": {len(report.commands)} commands on {len(report.hosts)} host(s); {n_err} error(s), {n_warn} warning(s)"
    )
    return lines
