"""The leaderboard's charts (Altair), built from the DataFrames of ``leaderboard.queries``."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

# every status (harness.verdicts.STATUSES) and "derived" (a claim counted as no evidence), one colour each
STATUS_COLORS = {
    "reproduced": "#2e7d32", "not-reproduced": "#c62828", "inconclusive": "#f9a825", "not-run": "#9e9e9e",
    "premise-failed": "#6a1b9a", "untestable": "#8d6e63", "off-plan": "#546e7a", "deviation": "#1565c0",
    "derived": "#90a4ae",
}  # fmt: skip


def status_color(**legend: Any) -> alt.Color:
    """Status as colour, the same colours on every chart."""
    scale = alt.Scale(domain=list(STATUS_COLORS), range=list(STATUS_COLORS.values()))
    return alt.Color("status:N", scale=scale, legend=alt.Legend(orient="bottom", title=None, **legend))


def status_bars(overview: pd.DataFrame, title: str = "Claims by verdict") -> alt.Chart:
    """One stacked bar per paper: its claims by verdict (from ``queries.overview``)."""
    statuses = list(STATUS_COLORS)
    long = overview.melt(id_vars="paper", value_vars=statuses, var_name="status", value_name="count")
    return (
        alt.Chart(long[long["count"] > 0], title=title)
        .mark_bar()
        .encode(
            y=alt.Y("paper:N", title=None),
            x=alt.X("count:Q", title="claims", stack="zero"),
            color=status_color(),
            order=alt.Order("rank:Q"),
            tooltip=["paper", "status", "count"],
        )
        .transform_calculate(rank=f"indexof({statuses}, datum.status)")
    )


def reported_vs_measured(data: pd.DataFrame) -> alt.LayerChart:
    """Each claim's distance from the reported value in tolerances (``queries.reported_vs_measured``): a point per
    claim in its status's colour on a symmetric-log axis, the shaded band [-1, 1] where a claim holds, a rule at 0."""
    symlog = alt.Scale(type="symlog")
    x = alt.X("z:Q", title="Δ / tolerance (measured − reported, in tolerances)", scale=symlog)
    claims = alt.Chart().transform_filter("datum.layer == 'claim'")
    band = alt.Chart().transform_filter("datum.layer == 'band'")
    return alt.layer(
        band.mark_rect(color="#2e7d32", opacity=0.12).encode(x=alt.X("lo:Q", scale=symlog), x2="hi:Q"),
        band.mark_rule(color="#888", strokeDash=[4, 4]).encode(x=alt.datum(0, scale=symlog)),
        claims.mark_point(filled=True, size=90).encode(
            x=x,
            y=alt.Y("label:N", title=None, sort=None, axis=alt.Axis(labelLimit=320)),
            color=status_color(),
            tooltip=["claim_id", "metric", "status", "tier", "reported", "measured", "tolerance", "delta", "z"],
        ),
        data=data,
    ).properties(height=alt.Step(28))


def trend_curve(points: pd.DataFrame, x_title: str, y_title: str) -> alt.LayerChart:
    """A trend claim as its curve (``queries.trend_points``): a point per run, the line through the mean at each x."""
    base = alt.Chart(points).encode(
        x=alt.X("x:Q", title=x_title, scale=alt.Scale(zero=False)),
        y=alt.Y("y:Q", title=y_title, scale=alt.Scale(zero=False)),
    )
    return alt.layer(
        base.mark_line(color="#555").encode(y=alt.Y("mean(y):Q", title=y_title)),
        base.mark_point(filled=True, size=70).encode(
            color=alt.Color("model:N", legend=alt.Legend(orient="bottom")),
            tooltip=["run_id", "model", "seed", "x", "y"],
        ),
    ).properties(height=260)


def training_curves(curves: pd.DataFrame) -> alt.FacetChart:
    """A run's logged values against the step (``queries.training_curves``): one panel per value, each on its own
    y scale (a loss near 1 and an accuracy near 95 would flatten each other on one)."""
    tooltip = [c for c in ("name", "step", "epoch", "value") if c in curves.columns]
    return _panels(curves, 260, 160, tooltip=tooltip)


def arm_curves(curves: pd.DataFrame) -> alt.FacetChart:
    """A delta claim's learning curves (``queries.arm_curves``): each logged value against the step, one panel per
    value on its own y scale, one line per run, coloured by model, so the two arms' gap can be read across training
    (its sign at the end is what a budget verdict judges)."""
    return _panels(
        curves, 320, 180, color=alt.Color("model:N", legend=alt.Legend(orient="bottom", title=None)),
        detail="run_id:N", tooltip=["model", "seed", "run_id", "name", "step", "value"],
    )  # fmt: skip


def _panels(curves: pd.DataFrame, width: int, height: int, **encodings: Any) -> alt.FacetChart:
    """Logged values against the step, one panel per value (three a row), each panel on its own y scale."""
    return (
        alt.Chart(curves)
        .mark_line(point=alt.OverlayMarkDef(size=20))
        .encode(
            x=alt.X("step:Q", title="step"), y=alt.Y("value:Q", title=None, scale=alt.Scale(zero=False)), **encodings
        )
        .properties(width=width, height=height)
        .facet(facet=alt.Facet("name:N", title=None), columns=3)
        .resolve_scale(y="independent")
    )
