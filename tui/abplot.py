"""The A/B plot widget (textual-plotext). Imported when the first A/B is shown, not at launch: plotext
costs the first frame ~0.1 s and a live run has nothing to plot for a while."""

from __future__ import annotations

from textual_plotext import PlotextPlot

from tui.plot import ABFigure, points


class ABPlot(PlotextPlot):
    """Redrawn only when its figure changes; stacked (arms above, effect below) when narrow."""

    DEFAULT_CSS = "ABPlot { height: 16; width: 1fr; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.shown: ABFigure | None = None
        self._side_by_side: bool | None = None

    def show(self, fig: ABFigure | None) -> None:
        if fig == self.shown and self._side_by_side == self._wide():
            return
        self.shown = fig
        self.draw()

    def _wide(self) -> bool:
        return self.size.width >= 90

    def on_resize(self) -> None:
        if self._side_by_side != self._wide():
            self.draw()

    def draw(self) -> None:
        plt = self.plt
        plt.clear_figure()
        fig = self.shown
        self._side_by_side = self._wide()
        self.styles.height = 16 if self._side_by_side else 30  # stacked: two plots, one above the other
        if fig is None or fig.empty:
            self.refresh()
            return
        if self._side_by_side:
            plt.subplots(1, 2)
        else:
            plt.subplots(2, 1)
        arms = plt.subplot(1, 1)
        arms.title(f"{fig.metric} per A/B pair (one axis)")
        x, y = points(fig.pairs, fig.a)
        if x:
            arms.plot(x, y, label="A baseline", marker="hd", color="blue")
        x, y = points(fig.pairs, fig.b)
        if x:
            arms.plot(x, y, label="B option", marker="hd", color="green")
        arms.xlabel("pair")
        arms.xticks([float(p) for p in fig.pairs])
        effect = plt.subplot(1, 2) if self._side_by_side else plt.subplot(2, 1)
        effect.title(fig.effect_title())
        x, y = points(fig.pairs, fig.effects)
        lows: list[float] = [0.0, *y]
        highs: list[float] = [0.0, *y]
        if fig.noise_pct is not None:
            effect.hline(fig.noise_pct, "gray")
            effect.hline(-fig.noise_pct, "gray")
            lows.append(-fig.noise_pct)
            highs.append(fig.noise_pct)
        if fig.ci is not None:
            effect.hline(fig.ci[0], "orange")
            effect.hline(fig.ci[1], "orange")
            lows.append(fig.ci[0])
            highs.append(fig.ci[1])
        if fig.goal_pct is not None:
            effect.hline(fig.goal_pct, "red")
            lows.append(fig.goal_pct)
            highs.append(fig.goal_pct)
        if x:
            effect.scatter(x, y, label="gain", marker="hd", color="green")
        span = max(highs) - min(lows) or 1.0
        effect.ylim(min(lows) - span * 0.1, max(highs) + span * 0.1)
        effect.xlabel("pair")
        effect.xticks([float(p) for p in fig.pairs])
        self.refresh()
