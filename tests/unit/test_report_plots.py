"""The HTML report's plots are honest (issue 36): the A/B axis starts at 0 and is labelled with ticks and
the metric; every option's gain is on one % scale shared by all options, with 0, the goal and the noise
drawn, so +7.6 % and +22.6 % look as different as they are."""

from __future__ import annotations

import re
from typing import Any

from agent.journal import events as ev
from agent.journal.view import SessionView
from agent.report import svg
from agent.report.audit import svg_gains, svg_plot, to_html

CAMPAIGN = "goal:\n  metric: output_tok_s\n  target_pct: 20\n"


def view_of(*records: dict[str, Any]) -> SessionView:
    view = SessionView()
    for seq, record in enumerate(records):
        view.apply(ev.entry({"seq": seq, "ts": "", "actor": "signoff", "session": "s", **record}))
    return view


def option(oid: int, gain: float, ci: tuple[float, float], base: float = 800.0) -> list[dict[str, Any]]:
    runs = []
    for pair in range(6):
        for arm, value in (("A", base + pair), ("B", (base + pair) * (1 + gain / 100))):
            runs.append({"kind": "bench.run", "option": oid, "arm": arm, "pair": pair, "value": value,
                         "valid": True, "purpose": "ab"})  # fmt: skip
    ratios = [1 + gain / 100 + d for d in (-0.01, 0.0, 0.01, -0.005, 0.005, 0.0)]
    ab = {"kind": "ab.result", "option": oid, "verdict": "improved", "effect_pct": gain, "ci_low": ci[0],
          "ci_high": ci[1], "metric": "output_tok_s", "pairs": 6, "ratios": ratios}  # fmt: skip
    return [*runs, ab]


def two_options() -> SessionView:
    return view_of(
        {"kind": "session.started", "campaign_text": CAMPAIGN, "policy_text": ""},
        {"kind": "phase", "phase": "apply", "option": 2, "title": "overlap scheduler"},
        *option(2, 7.6, (5.7, 9.5)),
        {"kind": "phase", "phase": "apply", "option": 3, "title": "MoE kernel occupancy"},
        *option(3, 22.6, (20.3, 25.0)),
    )


def numbers(svg_text: str, cls: str, attr: str) -> list[float]:
    return [float(v) for v in re.findall(rf'<[a-z]+ [^>]*?\b{attr}="([-0-9.]+)"[^>]*class="{cls}"', svg_text)]


def test_every_gain_is_on_one_scale_with_zero_the_goal_and_the_noise() -> None:
    view = two_options()
    chart = svg_gains(view)
    effects = numbers(chart, "effect", "cx")
    zero = float(re.search(r'<line x1="([0-9.]+)" x2="\1" y1="\d+" y2="\d+" stroke="#555"/>', chart).group(1))  # type: ignore[union-attr]
    small, large = (e - zero for e in effects)
    assert abs(large / small - 22.6 / 7.6) < 0.02  # the same scale: three times the gain, three times as far
    assert chart.count('class="goal"') == 1 and "goal +20%" in chart
    assert chart.count('class="noise"') == 2 and chart.count('class="ci"') == 2
    # Each option's own plot draws its gain on that same scale: the zero line and the goal at the same height.
    plots = [svg_plot(view.options[o], None, view) for o in (2, 3)]
    from agent.report.audit import gain_scale

    shared = [svg_plot(view.options[o], gain_scale(view), view) for o in (2, 3)]
    goal_y = [numbers(p, "goal", "y1") for p in shared]
    assert goal_y[0] == goal_y[1] and goal_y[0]
    heights = [numbers(p, "effect", "cy")[0] for p in shared]
    assert heights[0] > heights[1]  # +7.6 % is drawn lower than +22.6 %, not at the same place
    assert all("% CI" in p for p in plots)


def test_the_ab_axis_starts_at_zero_with_ticks_and_the_metric_as_its_title() -> None:
    view = two_options()
    plot = svg_plot(view.options[2], None, view)
    pairs = plot.split('<g transform="translate(430,0)">')[0]
    ticks = re.findall(r'text-anchor="end"[^>]*>([0-9,]+)</text>', pairs)
    assert ticks[0] == "0" and len(ticks) >= 4  # from 0, with numbers between
    assert ">output_tok_s</text>" in pairs and ">A/B pair</text>" in pairs  # both axes titled
    assert "A baseline" in pairs and "B option" in pairs  # the legend
    assert pairs.count('class="arm-A"') == 6 and pairs.count('class="arm-B"') == 6


def test_nice_ticks_cover_the_range_with_round_steps() -> None:
    assert svg.nice_ticks(0, 987.8) == [0, 250, 500, 750, 1000]
    assert svg.nice_ticks(-2.3, 25.0) == [-10, 0, 10, 20, 30]
    assert svg.nice_ticks(5, 5)[0] <= 5 <= svg.nice_ticks(5, 5)[-1]
    assert svg.nice_ticks(float("nan"), 1) == [0.0, 1.0]


def test_the_page_holds_the_shared_chart_once_and_no_script() -> None:
    page = to_html(two_options())
    assert page.count('<div class="plot gains"><svg') == 1 and "<script" not in page
    hostile = view_of(
        {"kind": "phase", "phase": "apply", "option": 2, "title": "<script>x</script>"}, *option(2, 5, (1, 9))
    )
    assert "<script>" not in to_html(hostile)
