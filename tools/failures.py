"""Failed requests as evidence: each arm's counts, and whether the option's failure rate is credibly higher.

One client error in 80 requests with none on the baseline is a fact to show, not a verdict: the question
is whether the option's arm fails more often than the baseline arm measured beside it, which is a 2×2
table (failed / not, option / baseline). It is answered by the one-sided Fisher exact test (Fisher 1935;
the conditional test on the table's margins, as `scipy.stats.fisher_exact(..., alternative="greater")`),
at `LEVEL`. The hypergeometric tail is summed here from its log-pmf with the terms' ratio recurrence, so
the signoff package needs no scipy (the tests check it against scipy and against hand-computed tables).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, Field

from tools.abstats import Arm, BenchRun

LEVEL = 0.05  # one-sided: the same 95 % the A/B's confidence intervals use
ERROR_SAMPLES = 5  # distinct error texts kept per arm
SHOWN_ERRORS = 3  # of which a verdict's reason quotes
ERROR_CHARS = 200
# Past this many requests in the two arms together the tail would take too long to sum term by term (no
# benchmark sends a billion requests; a tool that says so is wrong), and the rates are compared as plain rates.
MAX_EXACT = 2_000_000_000
FAILED_REQUESTS = "failed requests: "  # how the verdict's reason on them starts


class Requests(BaseModel):
    """One arm's requests over its benchmark runs, as the load tool counted them."""

    attempted: int = 0
    failed: int = 0
    runs: int = 0  # runs whose tool counted its requests
    errors: list[str] = Field(default_factory=list)  # distinct error texts, the first ERROR_SAMPLES

    @property
    def rate(self) -> float:
        return self.failed / self.attempted if self.attempted else 0.0

    def describe(self) -> str:
        return f"{self.failed} of {self.attempted}"


class FailureTest(BaseModel):
    """The option's failed requests against the baseline arm's: the counts, the one-sided p and the verdict."""

    option: Requests
    baseline: Requests
    p: float
    level: float = LEVEL
    higher: bool  # the option's failure rate is credibly higher than the baseline's (p < level)
    exact: bool = True  # False: counts beyond MAX_EXACT, compared as plain rates

    def describe(self) -> str:
        test = f"one-sided Fisher exact p={self.p:.2g}" if self.exact else "too many to test exactly: plain rates"
        said = (
            f"{FAILED_REQUESTS}{self.option.describe()} with the option, {self.baseline.describe()} on the baseline "
            f"({test}): "
        )
        said += (
            f"credibly more than the baseline at the {self.level:g} level"
            if self.higher
            else f"not credibly more than the baseline at the {self.level:g} level, a fact and not a verdict"
        )
        errors = self.option.errors or self.baseline.errors
        if errors:
            whose = "the option's" if self.option.errors else "the baseline's"
            said += f" — {whose} errors: " + "; ".join(repr(e) for e in errors[:SHOWN_ERRORS])
        return said


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def hypergeom_sf(x: int, total: int, marked: int, drawn: int) -> float:
    """P(X >= x) for X the marked items among `drawn` taken without replacement from `total`, `marked` of them
    marked. Summed outward from x while the terms matter; the side away from the mode, so the terms shrink."""
    lo, hi = max(0, drawn - (total - marked)), min(drawn, marked)
    if x <= lo:
        return 1.0
    if x > hi:
        return 0.0
    rest = total - marked

    def pmf(k: int) -> float:
        return math.exp(_log_comb(marked, k) + _log_comb(rest, drawn - k) - _log_comb(total, drawn))

    mode = (drawn + 1) * (marked + 1) // (total + 2)
    if x > mode:  # the upper tail itself: terms fall from x on
        term = pmf(x)
        tail, k = term, x
        while k < hi and term > tail * 1e-17:
            term *= (marked - k) * (drawn - k) / ((k + 1) * (rest - drawn + k + 1))
            k += 1
            tail += term
        return min(tail, 1.0)
    # x at or below the mode: one minus the lower tail P(X <= x-1), whose terms fall from x-1 down
    term = pmf(x - 1)
    below, k = term, x - 1
    while k > lo and term > below * 1e-17:
        term *= k * (rest - drawn + k) / ((marked - k + 1) * (drawn - k + 1))
        k -= 1
        below += term
    return min(max(1.0 - below, 0.0), 1.0)


def fisher_greater(option_failed: int, option_total: int, baseline_failed: int, baseline_total: int) -> float:
    """One-sided Fisher exact p that the option's failure rate is higher than the baseline's: P(X >= option_failed)
    given the margins (scipy: fisher_exact([[of, ot - of], [bf, bt - bf]], alternative="greater"))."""
    if not (0 <= option_failed <= option_total and 0 <= baseline_failed <= baseline_total):
        raise ValueError("failed requests must be between 0 and the requests attempted")
    return hypergeom_sf(option_failed, option_total + baseline_total, option_failed + baseline_failed, option_total)


def compare(option: Requests, baseline: Requests, level: float = LEVEL) -> FailureTest:
    if option.attempted + baseline.attempted > MAX_EXACT:
        # Beyond what any benchmark sends: no test, and a higher rate is taken at its word (the safe side).
        return FailureTest(
            option=option, baseline=baseline, p=0.0, level=level, higher=option.rate > baseline.rate, exact=False
        )
    p = fisher_greater(option.failed, option.attempted, baseline.failed, baseline.attempted)
    return FailureTest(option=option, baseline=baseline, p=p, level=level, higher=p < level)


def one_line(text: str) -> str:
    """An error text as a verdict quotes it: on one line, at most ERROR_CHARS."""
    flat = " ".join(text.split())
    return flat if len(flat) <= ERROR_CHARS else flat[: ERROR_CHARS - 1] + "…"


def tally(runs: Iterable[BenchRun], arm: Arm) -> Requests:
    """An arm's requests over the runs whose tool counted them (a run without a readable result has no counts:
    it is a failed run, judged as one)."""
    out = Requests()
    errors: dict[str, None] = {}
    for run in runs:
        if run.arm != arm or run.requests is None:
            continue
        out.attempted += run.requests
        out.failed += run.failed_requests or 0
        out.runs += 1
        for text in run.errors:
            if len(errors) < ERROR_SAMPLES and (line := one_line(text)):
                errors.setdefault(line)
    out.errors = list(errors)
    return out


def counted(runs: Sequence[BenchRun]) -> dict[str, Requests] | None:
    """Both arms' tallies, or None when no run of either arm counted its requests (a tool without counts)."""
    arms = {arm: tally(runs, arm) for arm in ("A", "B")}
    return arms if any(r.runs for r in arms.values()) else None
