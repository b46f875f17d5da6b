"""What the A/B plot shows (tui/abplot.py draws it): both arms per pair on one labelled axis, and the
effect per pair against the run's noise band, the 95% CI and the campaign's goal.

Each arm scaled on its own hides the gain (777–812 and 964–988 look alike); on one axis a +22.6 %
gain is a gap between two lines, and the CI beside the noise band and the goal says whether it counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.journal.view import OptionView, SessionView


@dataclass(frozen=True)
class ABFigure:
    """What the plot shows, computed from the fold (testable without a terminal)."""

    metric: str
    pairs: list[int]
    a: list[float | None]
    b: list[float | None]
    effects: list[float | None]  # the gain per pair in % (B/A − 1, or A/B − 1 when lower is better)
    ci: tuple[float, float] | None
    noise_pct: float | None
    goal_pct: float | None

    @property
    def empty(self) -> bool:
        return not any(v is not None for v in (*self.a, *self.b))

    def effect_title(self) -> str:
        parts = ["gain per pair, %"]
        if self.ci is not None:
            parts.append(f"95% CI {self.ci[0]:+.1f}…{self.ci[1]:+.1f}")
        if self.noise_pct is not None:
            parts.append(f"noise ±{self.noise_pct:g}")
        if self.goal_pct is not None:
            parts.append(f"goal {self.goal_pct:+g}")
        return " · ".join(parts)


def figure(option: OptionView, view: SessionView) -> ABFigure:
    pairs = option.pairs()
    ab = option.ab
    # The gain, as the A/B computes it: B/A − 1 when higher is better (throughput), A/B − 1 when lower
    # is (latency), so the points sit on the same side as the CI and the goal.
    lower = ab is not None and ab.higher_is_better is False
    effects = [((a / b) if lower else (b / a)) * 100 - 100 if a and b else None for _, a, b in pairs]
    noise = None
    if ab is not None and ab.noise_pct is not None:
        noise = ab.noise_pct
    if view.noise_floor_pct is not None:
        noise = max(noise or 0.0, view.noise_floor_pct)
    ci = (option.ci[0], option.ci[1]) if option.ci and len(option.ci) == 2 else None
    metric = (ab.metric if ab is not None and ab.metric else None) or view.goal_metric or "metric"
    return ABFigure(
        metric=metric,
        pairs=[p for p, _, _ in pairs],
        a=[a for _, a, _ in pairs],
        b=[b for _, _, b in pairs],
        effects=effects,
        ci=ci,
        noise_pct=noise,
        goal_pct=view.goal_pct,
    )


def points(xs: list[int], ys: list[float | None]) -> tuple[list[int], list[float]]:
    kept = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
    return [x for x, _ in kept], [y for _, y in kept]
