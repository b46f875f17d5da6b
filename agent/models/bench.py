"""The benchmark as a campaign writes it: its command, parser, metric, pairs and stopping, SLOs and load sweep."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, StrictInt, field_validator, model_validator

from agent.models.commands import CommandSpec, Strict
from tools.benchparse import ParserName, known_metric, metric_names, reports
from tools.sweep import Slo


class SearchSpec(Strict):
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


class SweepSpec(Strict):
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
            regex_compiles(pattern, f"patterns.{field}")
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


def regex_compiles(pattern: str, where: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{where}: {pattern!r} is not a valid regex: {exc}") from None
