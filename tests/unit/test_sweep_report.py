"""The auditor's report of a load sweep, made from the journal alone: a table per level, the capacities
and the search, the fitted step-time model, and in HTML a goodput-by-load plot with each arm's knee. The
journal is a file anyone could edit, so hostile text comes out escaped and a malformed sweep line is
left out rather than drawn wrong."""

from __future__ import annotations

import re
from typing import Any

from agent.journal import events as ev
from agent.journal.view import SessionView
from agent.report.audit import markdown, svg_sweep, to_html


def _arm(mean: float, slo: str, goodput: float | None) -> dict[str, Any]:
    return {"runs": 5, "mean": mean, "slo": slo, "checks": [], "goodput": goodput}


def sweep_fields(var: str = "concurrency", reason: str = "judged at concurrency=60") -> dict[str, Any]:
    return {
        "option": 3,
        "summary": "one line",
        "var": var,
        "values": [30, 60, 90],
        "level": 60,
        "at": "slo",
        "slo": ["p99_tpot <= 105"],
        "levels": [
            {"level": 30, "verdict": "improved", "effect_pct": 19.9, "ci": [16.7, 23.2], "pairs": 5, "breached": [],
             "arms": {"A": _arm(599.3, "meets", 599.3), "B": _arm(718.8, "meets", 718.8)}},
            {"level": 60, "verdict": "improved", "effect_pct": 17.1, "ci": [15.3, 19.0], "pairs": 5, "breached": [],
             "arms": {"A": _arm(753.1, "meets", 753.1), "B": _arm(882.0, "meets", 882.0)}},
            {"level": 90, "verdict": "improved", "effect_pct": 21.2, "ci": [19.3, 23.1], "pairs": 5, "breached": [],
             "arms": {"A": _arm(803.4, "fails", 0.0), "B": _arm(973.6, "meets", 973.6)}},
        ],
        "capacity": {"A": 65, "B": 86},
        "capacity_source": "search",
        "capacity_gain_pct": 32.3,
        "fit": {
            "A": {"metric": "mean_tpot", "intercept": 18.83, "slope": 1.0384, "intercept_ci": [16.88, 20.79],
                  "slope_ci": [1.0082, 1.0685], "points": 15, "levels": 3, "r2": 0.998, "residual_sd": 1.0},
            "B": {"metric": "mean_tpot", "reason": "2 reading(s) at 1 level(s); a fit with CIs needs 3 over 2 levels"},
        },
        "search": {"A": {"capacity": 65, "failing": 72, "closed": False, "probes": 6, "steps": []}},
        "guardrails_at": "all",
        "reasons": [reason],
    }  # fmt: skip


def view_of(*records: dict[str, Any]) -> SessionView:
    view = SessionView()
    for seq, record in enumerate(records):
        view.apply(ev.entry({"seq": seq, "ts": "", "actor": "signoff", "session": "s", **record}))
    return view


def sweep_view(**kw: Any) -> SessionView:
    return view_of(
        {"kind": "sweep.search", "option": 3, "arm": "A", "level": 128, "judgement": "fails"},
        {"kind": "sweep.search", "option": 3, "arm": "A", "level": 16, "judgement": "meets"},
        {"kind": "sweep.result", **sweep_fields(**kw)},
        {"kind": "ab.result", "option": 3, "verdict": "improved", "effect_pct": 17.1, "level": 60,
         "metric": "output_tok_s"},
    )  # fmt: skip


def test_the_markdown_has_a_row_per_level_the_capacities_and_the_fits() -> None:
    md = markdown(sweep_view())
    assert "Load sweep over `concurrency` — judged at concurrency=60:" in md
    assert "| 60 ◀ | improved | +17.1% | [+15.3, +19.0] | 5 | 753.1 | 882.0 | meets | meets | 753.1 | 882.0 |" in md
    assert "| 90 | improved | +21.2% | [+19.3, +23.1] | 5 | 803.4 | 973.6 | fails | meets | 0.0 | 973.6 |" in md
    assert "- capacity within p99_tpot <= 105 (bounded search): baseline 65, option 86 (+32.3%)" in md
    assert "search, baseline: 6 probes, not met from 72; bracket open" in md
    assert "- step time, baseline: mean_tpot = 18.83 ms (95% CI 16.88…20.79) + 1.0384 ms × concurrency" in md
    assert "- step time, option: not fitted — 2 reading(s) at 1 level(s)" in md


def _coords(svg: str, tag: str, attr: str) -> list[float]:
    return [float(v) for v in re.findall(rf'<{tag}[^>]*?\b{attr}="([-0-9.]+)"', svg)]


def test_the_html_plot_draws_both_arms_by_load_and_each_knee_where_it_is() -> None:
    view = sweep_view()
    svg = svg_sweep(view.options[3])
    # Goodput is known at the measured levels only: a point per arm and level, no line between levels.
    assert "<polyline" not in svg and svg.count('class="point-A"') == 3 and svg.count('class="point-B"') == 3
    knees = re.findall(r'<line x1="([0-9.]+)"[^>]*class="knee"', svg)
    ticks = dict(re.findall(r'<text x="([0-9.]+)" [^>]*class="level">(30|60|90)</text>', svg))
    x30, x90 = (float(x) for x, level in ticks.items() if level in ("30", "90"))
    # The knees are placed on the same axis as the levels: 65 and 86 between 30 and 90, in order.
    base, option = (float(k) for k in knees)
    assert x30 < base < option < x90
    assert abs((base - x30) / (x90 - x30) - (65 - 30) / (90 - 30)) < 0.02  # on the same linear axis
    assert abs((option - x30) / (x90 - x30) - (86 - 30) / (90 - 30)) < 0.02
    assert "baseline knee 65" in svg and "option knee 86" in svg
    assert svg.count('class="probe"') == 2 and "probes, baseline</text>" in svg  # the search's probes, labelled
    assert "goodput (output_tok_s)" in svg and ">concurrency</text>" in svg  # both axes titled
    # The goodput axis starts at 0: its lowest tick says so.
    assert re.search(r'text-anchor="end"[^>]*>0</text>', svg)
    page = to_html(view)
    assert '<div class="plot sweep"><svg' in page and "<script" not in page


def test_hostile_text_in_a_sweep_line_comes_out_escaped() -> None:
    view = sweep_view(var='c"><script>alert(1)</script>', reason="<img src=x onerror=alert(1)>")
    page = to_html(view)
    assert "<script>" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    md = markdown(view)
    assert "<img src=x onerror=alert(1)>" in md  # Markdown keeps the text; HTML is where it is escaped


def test_a_malformed_or_non_finite_sweep_line_is_left_out_not_drawn_wrong() -> None:
    broken = sweep_fields()
    broken["levels"] = "not a list"
    view = view_of({"kind": "sweep.result", **broken})
    assert svg_sweep(view.options[3]) == ""
    assert "Load sweep" not in markdown(view)
    odd = sweep_fields()
    odd["levels"][1]["arms"]["B"]["goodput"] = float("nan")
    odd["capacity"] = {"A": float("inf"), "B": 86}
    svg = svg_sweep(view_of({"kind": "sweep.result", **odd}).options[3])
    assert "nan" not in svg.lower() and "inf" not in svg.lower()
    assert svg.count('class="knee"') == 1


def test_a_session_without_a_sweep_has_no_sweep_section() -> None:
    view = view_of({"kind": "ab.result", "option": 2, "verdict": "improved", "effect_pct": 7.0})
    assert "Load sweep" not in markdown(view)
    assert svg_sweep(view.options[2]) == ""
    assert 'class="plot sweep"' not in to_html(view)


def test_the_tui_evidence_tells_a_sweeps_story_per_level_with_the_knee_and_the_fit() -> None:
    import io

    from rich.console import Console

    from tui import render

    view = view_of({"kind": "sweep.result", **sweep_fields()})
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(render.evidence(view.options[3]))
    text = " ".join(console.export_text().split())
    assert "load sweep over concurrency — judged at concurrency=60 ◀" in text
    assert "30 improved +19.9% [+16.7, +23.2] meets / meets 599.3 → 718.8" in text
    assert "60 ◀ improved +17.1% [+15.3, +19.0]" in text  # the judged level, marked
    assert "90 improved +21.2% [+19.3, +23.1] fails / meets 0.0 → 973.6" in text
    assert "knee within p99_tpot <= 105: baseline 65 → option 86, +32.3% (bounded search)" in text
    assert "capacity search, baseline: 6 probes, not met from 72; open" in text
    assert "step time, baseline: mean_tpot = 18.8 + 1.038×concurrency" in text
    assert "step time, option" not in text  # no fit: nothing drawn for it
    broken = view_of({"kind": "sweep.result", **{**sweep_fields(), "levels": "not a list"}})
    assert render.sweep_parts(broken.options[3]) == []  # a line that does not read as a sweep: nothing, not wrong


def test_while_a_sweep_runs_the_status_and_progress_say_the_level() -> None:
    campaign = "benchmark:\n  sweep:\n    var: concurrency\n    values: [30, 60, 90]\n"
    view = view_of(
        {"kind": "session.started", "campaign_text": campaign, "policy_text": ""},
        {"kind": "phase", "phase": "benchmark", "option": 2, "pairs": 5},
        {"kind": "phase", "phase": "benchmark.level", "option": 2, "pairs": 5, "level": 60},
        {"kind": "bench.progress", "option": 2, "pair": 3, "of": 5, "level": 60},
    )
    assert view.activity == "benchmark #2 at concurrency=60"  # not the raw event name `benchmark.level #2`
    assert view.level_label == "concurrency=60" and view.bench == (3, 5)
    view.apply(ev.entry({"seq": 9, "ts": "", "kind": "phase", "phase": "stress", "option": 2}))
    assert view.activity == "stress #2" and view.level_label == ""


def test_a_forged_sweep_line_neither_crashes_the_screen_nor_the_report() -> None:
    import io

    from rich.console import Console

    from agent.report import svg
    from tui import render

    forged = sweep_fields()
    forged["fit"] = {"B": {"slope": "x", "intercept": "y", "metric": "m"}}
    forged["levels"][0]["ci"] = [1.0]
    forged["capacity"] = {"A": 10, "C": 15}
    view = view_of({"kind": "sweep.result", **forged})
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(render.evidence(view.options[3]))
    assert "its journal line holds values no run writes; not shown" in console.export_text()
    page = to_html(view)
    assert "knee 15" not in page and "<script" not in page  # an arm no run has is not drawn
    assert svg.nice_ticks(-1e308, 1e308) == [0.0, 1.0] and svg.nice_ticks(0, 5e-324) == [0.0, 1.0]
    assert svg.ab_pairs([(1, 1e308, -1e308)], "m")  # drawn, not raised
