"""The HTML report's plots, drawn honestly: every axis starts where its quantity does (a throughput at 0), has
ticks with numbers and a title with its unit; every option's gain sits on one % scale shared by all options,
with 0, the goal and the run's noise drawn on it; a sweep's goodput is a value per measured level (points),
never a line between levels that implies readings nobody took. Plain SVG text, no scripts; every text from
the journal is escaped (the journal is a file anyone could edit)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

BASE, OPTION, CI, GOAL, NOISE, GRID = "#888", "#1f6feb", "#d73a49", "#2da44e", "#e6e6e6", "#eee"
FONT = 'font-size="10" font-family="system-ui,sans-serif"'


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """Round numbers from at most `lo` to at least `hi`, about `count` of them, evenly spaced."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return [0.0, 1.0]
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(1, count - 1)
    if not math.isfinite(raw) or raw < 1e-300:
        return [0.0, 1.0]  # a span no run measures (an edited journal): an axis, never a crash
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(lo / step + 1e-9) * step
    ticks = [first]
    while ticks[-1] < hi - 1e-9 and len(ticks) < 50:
        ticks.append(ticks[-1] + step)
    return [round(t, 10) for t in ticks]


def label(value: float) -> str:
    if abs(value) >= 10_000:
        return f"{value / 1000:g}k"
    return f"{value:,.0f}" if abs(value) >= 100 or value == int(value) else f"{value:g}"


@dataclass(frozen=True)
class Axis:
    """A linear axis from `lo` to `hi` drawn between pixels `start` and `end`."""

    lo: float
    hi: float
    start: float
    end: float

    def at(self, value: float) -> float:
        span = (self.hi - self.lo) or 1.0
        return self.start + (self.end - self.start) * (value - self.lo) / span


@dataclass(frozen=True)
class GainScale:
    """The one % scale every option's gain is drawn on, from the lowest CI bound (or 0, or minus the noise)
    to the highest (or the goal)."""

    lo: float
    hi: float
    goal: float | None = None

    @classmethod
    def of(cls, spans: Sequence[tuple[float, float]], goal: float | None = None) -> GainScale:
        points = [0.0, *(v for span in spans for v in span if math.isfinite(v))]
        if goal is not None and math.isfinite(goal):
            points.append(goal)
        ticks = nice_ticks(min(points), max(points), 5)
        return cls(ticks[0], ticks[-1], goal if goal is not None and math.isfinite(goal) else None)


def _svg(width: int, height: int, title: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{html.escape(title)}"><title>{html.escape(title)}</title>'
    ]


def side_by_side(*figures: tuple[int, int, str]) -> str:
    """One SVG holding figures (width, height, svg text) left to right: a report's plot is one image."""
    shown = [f for f in figures if f[2]]
    if not shown:
        return ""
    width, height = sum(w for w, _, _ in shown), max(h for _, h, _ in shown)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">']
    x = 0
    for w, _, text in shown:
        # Each figure's content moved right, in a group: one <svg> element, so the image is one and whole.
        body = text[text.index(">") + 1 : text.rindex("</svg>")]
        parts.append(f'<g transform="translate({x},0)">{body}</g>')
        x += w
    parts.append("</svg>")
    return "".join(parts)


def _y_axis(parts: list[str], axis: Axis, ticks: list[float], x0: float, x1: float, unit: str = "") -> None:
    for t in ticks:
        y = axis.at(t)
        parts.append(f'<line x1="{x0}" x2="{x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}"/>')
        parts.append(f'<text x="{x0 - 4}" y="{y + 3:.1f}" text-anchor="end" {FONT}>{label(t)}{unit}</text>')


def ab_pairs(
    pairs: Sequence[tuple[int, float | None, float | None]], metric: str, *, width: int = 430, height: int = 190
) -> list[str]:
    """Both arms pair by pair on one axis from 0 (a gap of +7 % looks like 7 %), with the metric as its title."""
    rows = [(p, a, b) for p, a, b in pairs if a is not None or b is not None]
    values = [v for _, a, b in rows for v in (a, b) if v is not None and math.isfinite(v)]
    if not values:
        return []
    left, right, top, bottom = 58, width - 10, 22, height - 34
    ticks = nice_ticks(min(0.0, min(values)), max(values), 5)
    y = Axis(ticks[0], ticks[-1], bottom, top)
    n = len(rows)
    x = Axis(0.5, n + 0.5, left, right)
    name = html.escape(metric)
    parts = _svg(width, height, f"{metric} per A/B pair, baseline and option")
    _y_axis(parts, y, ticks, left, right)
    parts.append(
        f'<text x="12" y="{(top + bottom) / 2:.0f}" {FONT} transform="rotate(-90 12 {(top + bottom) / 2:.0f})" '
        f'text-anchor="middle">{name}</text>'
    )
    step = max(1, math.ceil(n / 12))
    for i, (p, _, _) in enumerate(rows, 1):
        if (i - 1) % step == 0 or i == n:
            parts.append(f'<text x="{x.at(i):.1f}" y="{bottom + 13}" text-anchor="middle" {FONT}>{p}</text>')
    parts.append(f'<text x="{(left + right) / 2:.0f}" y="{height - 8}" text-anchor="middle" {FONT}>A/B pair</text>')
    for arm, color, dx in (("A", BASE, -0.15), ("B", OPTION, 0.15)):
        for i, (_, a, b) in enumerate(rows, 1):
            v = a if arm == "A" else b
            if v is not None and math.isfinite(v):
                cx = x.at(i + dx)
                parts.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y.at(ticks[0]):.1f}" y2="{y.at(v):.1f}" '
                             f'stroke="{color}" stroke-width="3" opacity="0.35"/>')  # fmt: skip
                parts.append(f'<circle cx="{cx:.1f}" cy="{y.at(v):.1f}" r="3" fill="{color}" class="arm-{arm}"/>')
    parts.append(f'<rect x="{left}" y="4" width="8" height="8" fill="{BASE}"/>')
    parts.append(f'<text x="{left + 11}" y="11" {FONT}>A baseline</text>')
    parts.append(f'<rect x="{left + 80}" y="4" width="8" height="8" fill="{OPTION}"/>')
    parts.append(f'<text x="{left + 91}" y="11" {FONT}>B option</text>')
    parts.append("</svg>")
    return parts


def gain_bar(
    effect: float,
    ci: tuple[float, float] | None,
    noise: float | None,
    scale: GainScale,
    *,
    width: int = 170,
    height: int = 190,
) -> list[str]:
    """One option's gain and 95 % CI on the shared % scale: 0, the goal and ± the noise of one pair drawn."""
    left, top, bottom = 44, 22, height - 34
    ticks = nice_ticks(scale.lo, scale.hi, 5)
    y = Axis(ticks[0], ticks[-1], bottom, top)
    cx = left + 40
    parts = _svg(width, height, f"gain {effect:+.1f}% on the scale shared by all options")
    _y_axis(parts, y, ticks, left, width - 10, "%")
    if noise is not None and math.isfinite(noise) and noise > 0:
        lo, hi = max(ticks[0], -noise), min(ticks[-1], noise)
        parts.append(f'<rect x="{cx - 14}" y="{y.at(hi):.1f}" width="28" height="{y.at(lo) - y.at(hi):.1f}" '
                     f'fill="{NOISE}" class="noise"/>')  # fmt: skip
    parts.append(f'<line x1="{left}" x2="{width - 10}" y1="{y.at(0):.1f}" y2="{y.at(0):.1f}" stroke="#555"/>')
    if scale.goal is not None:
        g = y.at(scale.goal)
        parts.append(f'<line x1="{left}" x2="{width - 10}" y1="{g:.1f}" y2="{g:.1f}" stroke="{GOAL}" '
                     'stroke-dasharray="4 3" class="goal"/>')  # fmt: skip
        parts.append(f'<text x="{width - 10}" y="{g - 3:.1f}" text-anchor="end" {FONT} fill="{GOAL}">'
                     f"goal {scale.goal:+g}%</text>")  # fmt: skip
    if ci is not None and all(math.isfinite(v) for v in ci):
        parts.append(f'<line x1="{cx}" x2="{cx}" y1="{y.at(ci[0]):.1f}" y2="{y.at(ci[1]):.1f}" stroke="{CI}" '
                     'stroke-width="4" class="ci"/>')  # fmt: skip
    parts.append(f'<circle cx="{cx}" cy="{y.at(effect):.1f}" r="4" fill="{CI}" class="effect"/>')
    bounds = f" {ci[0]:+.1f}…{ci[1]:+.1f}" if ci is not None and all(math.isfinite(v) for v in ci) else ""
    parts.append(f'<text x="{left}" y="11" {FONT}>{effect:+.1f}% CI{bounds}</text>')
    parts.append(f'<text x="{left}" y="{height - 8}" {FONT}>gain, %{" · grey: ± noise" if noise else ""}</text>')
    parts.append("</svg>")
    return parts


@dataclass(frozen=True)
class GainRow:
    name: str
    effect: float
    ci: tuple[float, float] | None
    noise: float | None


def gains(rows: Sequence[GainRow], scale: GainScale, *, width: int = 720) -> str:
    """Every option's gain on one horizontal % scale: so +7.6 % and +22.6 % look as different as they are."""
    if not rows:
        return ""
    row_h, top, label_w = 22, 26, 260
    height = top + row_h * len(rows) + 34
    ticks = nice_ticks(scale.lo, scale.hi, 7)
    x = Axis(ticks[0], ticks[-1], label_w, width - 20)
    bottom = top + row_h * len(rows)
    parts = _svg(width, height, "gain of each option, 95% CI, on one scale")
    for t in ticks:
        parts.append(f'<line x1="{x.at(t):.1f}" x2="{x.at(t):.1f}" y1="{top}" y2="{bottom}" stroke="{GRID}"/>')
        parts.append(f'<text x="{x.at(t):.1f}" y="{bottom + 13}" text-anchor="middle" {FONT}>{label(t)}%</text>')
    parts.append(f'<line x1="{x.at(0):.1f}" x2="{x.at(0):.1f}" y1="{top - 4}" y2="{bottom}" stroke="#555"/>')
    if scale.goal is not None:
        g = x.at(scale.goal)
        parts.append(f'<line x1="{g:.1f}" x2="{g:.1f}" y1="{top - 4}" y2="{bottom}" stroke="{GOAL}" '
                     'stroke-dasharray="4 3" class="goal"/>')  # fmt: skip
        parts.append(f'<text x="{g:.1f}" y="{top - 8}" text-anchor="middle" {FONT} fill="{GOAL}">'
                     f"goal {scale.goal:+g}%</text>")  # fmt: skip
    for i, r in enumerate(rows):
        cy = top + row_h * i + row_h / 2
        parts.append(f'<text x="4" y="{cy + 3:.1f}" {FONT}>{html.escape(r.name[:44])}</text>')
        if r.noise is not None and math.isfinite(r.noise) and r.noise > 0:
            lo, hi = max(ticks[0], -r.noise), min(ticks[-1], r.noise)
            parts.append(f'<rect x="{x.at(lo):.1f}" y="{cy - 7:.1f}" width="{x.at(hi) - x.at(lo):.1f}" height="14" '
                         f'fill="{NOISE}" class="noise"/>')  # fmt: skip
        if r.ci is not None and all(math.isfinite(v) for v in r.ci):
            parts.append(f'<line x1="{x.at(r.ci[0]):.1f}" x2="{x.at(r.ci[1]):.1f}" y1="{cy:.1f}" y2="{cy:.1f}" '
                         f'stroke="{CI}" stroke-width="4" class="ci"/>')  # fmt: skip
        parts.append(f'<circle cx="{x.at(r.effect):.1f}" cy="{cy:.1f}" r="4" fill="{CI}" class="effect"/>')
        parts.append(f'<text x="{label_w - 8}" y="{cy + 3:.1f}" text-anchor="end" {FONT}>{r.effect:+.1f}%</text>')
    parts.append(
        f'<text x="{label_w}" y="{height - 6}" {FONT}>gain, % (dot: estimate; red bar: 95% CI; grey: ± noise of one '
        "pair; dashed: the goal)</text>"
    )
    parts.append("</svg>")
    return "".join(parts)


def sweep_points(
    series: dict[str, list[tuple[float, float]]],
    knees: dict[str, float],
    probes: Sequence[tuple[str | None, float, str | None]],
    *,
    var: str,
    what: str,
    width: int = 520,
    height: int = 230,
) -> str:
    """A sweep: the value at each measured level as a point per arm (goodput is known where it was measured,
    nothing between), each arm's knee dashed, and the capacity search's probes on labelled rows below."""
    xs = [lv for pts in series.values() for lv, _ in pts] + list(knees.values()) + [lv for _, lv, _ in probes]
    ys = [v for pts in series.values() for _, v in pts]
    if not xs or not ys:
        return ""
    probe_rows = [arm for arm in ("A", "B") if any(a == arm for a, _, _ in probes)]
    left, right, top = 100, width - 16, 22
    bottom = height - 36 - 12 * len(probe_rows)
    x_ticks = sorted({lv for pts in series.values() for lv, _ in pts})
    x = (
        Axis(min(xs), max(xs), left + 10, right - 10)
        if max(xs) > min(xs)
        else Axis(min(xs) - 1, max(xs) + 1, left, right)
    )
    y_ticks = nice_ticks(0.0, max(ys), 5)
    y = Axis(y_ticks[0], y_ticks[-1], bottom, top)
    name, shown = html.escape(var), html.escape(what)
    parts = _svg(width, height, f"{what} by {var}, baseline and option")
    _y_axis(parts, y, y_ticks, left, right)
    parts.append(
        f'<text x="12" y="{(top + bottom) / 2:.0f}" {FONT} transform="rotate(-90 12 {(top + bottom) / 2:.0f})" '
        f'text-anchor="middle">{shown}</text>'
    )
    for lv in x_ticks:
        parts.append(f'<text x="{x.at(lv):.1f}" y="{bottom + 13}" text-anchor="middle" {FONT} class="level">'
                     f"{lv:g}</text>")  # fmt: skip
    parts.append(f'<text x="{(left + right) / 2:.0f}" y="{bottom + 25}" text-anchor="middle" {FONT}>{name}</text>')
    colors = {"A": BASE, "B": OPTION}
    for arm, pts in series.items():
        dx = -3 if arm == "A" else 3
        for lv, v in pts:
            parts.append(f'<circle cx="{x.at(lv) + dx:.1f}" cy="{y.at(v):.1f}" r="4" fill="{colors[arm]}" '
                         f'class="point-{arm}"/>')  # fmt: skip
    for arm, cap in knees.items():
        kx = x.at(cap)
        parts.append(f'<line x1="{kx:.1f}" x2="{kx:.1f}" y1="{top}" y2="{bottom}" stroke="{colors[arm]}" '
                     'stroke-dasharray="4 3" class="knee"/>')  # fmt: skip
        who = "baseline" if arm == "A" else "option"
        parts.append(f'<text x="{kx + 3:.1f}" y="{top + 10 + (12 if arm == "B" else 0)}" {FONT} '
                     f'fill="{colors[arm]}">{who} knee {cap:g}</text>')  # fmt: skip
    for row, arm in enumerate(probe_rows):
        y0 = bottom + 30 + 12 * row
        who = "baseline" if arm == "A" else "option"
        parts.append(f'<text x="{left - 4}" y="{y0 + 5}" text-anchor="end" {FONT} class="probe-row">'
                     f"probes, {who}</text>")  # fmt: skip
        for a, lv, judgement in probes:
            if a == arm:
                fill = GOAL if judgement == "meets" else CI
                parts.append(f'<rect x="{x.at(lv) - 1.5:.1f}" y="{y0 - 2}" width="3" height="8" fill="{fill}" '
                             'class="probe"/>')  # fmt: skip
    parts.append(f'<rect x="{left}" y="4" width="8" height="8" fill="{BASE}"/>')
    parts.append(f'<text x="{left + 11}" y="11" {FONT}>A baseline</text>')
    parts.append(f'<rect x="{left + 80}" y="4" width="8" height="8" fill="{OPTION}"/>')
    parts.append(f'<text x="{left + 91}" y="11" {FONT}>B option</text>')
    if probes:
        parts.append(f'<text x="{left + 160}" y="11" {FONT}>probes: <tspan fill="{GOAL}">met</tspan> '
                     f'<tspan fill="{CI}">not met</tspan></text>')  # fmt: skip
    parts.append("</svg>")
    return "".join(parts)
