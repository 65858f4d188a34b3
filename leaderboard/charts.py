"""The leaderboard's charts (Altair), built from the DataFrames of ``leaderboard.queries``."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

STATUS_COLORS = {"reproduced": "#2e7d32", "not-reproduced": "#c62828", "inconclusive": "#f9a825", "not-run": "#9e9e9e"}


def status_color(**legend: Any) -> alt.Color:
    """Status as colour, the same four colours on every chart."""
    scale = alt.Scale(domain=list(STATUS_COLORS), range=list(STATUS_COLORS.values()))
    return alt.Color("status:N", scale=scale, legend=alt.Legend(orient="bottom", title=None, **legend))


def status_bars(overview: pd.DataFrame) -> alt.Chart:
    """One stacked bar per paper: its claims by verdict (from ``queries.overview``)."""
    statuses = list(STATUS_COLORS)
    long = overview.melt(id_vars="paper", value_vars=statuses, var_name="status", value_name="count")
    return (
        alt.Chart(long[long["count"] > 0], title="Claims by verdict")
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


def reported_vs_measured(data: pd.DataFrame) -> alt.FacetChart:
    """Measured against reported, one panel per metric (``queries.reported_vs_measured``): a point per claim in its
    status's colour, a bar for the tolerance band around the reported value, and the dashed line y = x."""
    base = alt.Chart().encode(
        x=alt.X("reported:Q", title="reported", scale=alt.Scale(zero=False)),
        y=alt.Y("measured:Q", title="measured", scale=alt.Scale(zero=False)),
    )
    claims = base.transform_filter("datum.layer == 'claim'")
    layers = alt.layer(
        base.transform_filter("datum.layer == 'diag'").mark_line(strokeDash=[4, 4], color="#888"),
        claims.mark_rule(strokeWidth=8, opacity=0.25).encode(y="lo:Q", y2="hi:Q"),
        claims.mark_point(filled=True, size=90).encode(
            color=status_color(), tooltip=["claim_id", "status", "tier", "reported", "measured", "lo", "hi"]
        ),
        data=data,
    )
    return (
        layers.properties(width=200, height=180)
        .facet(facet=alt.Facet("panel:N", title=None), columns=3)
        .resolve_scale(x="independent", y="independent")
    )


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
