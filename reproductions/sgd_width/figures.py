"""The two figures the SGD width claims are about, as data (pure functions of run records) and Vega-Lite specs.

1. Test accuracy against the normalized noise scale, one curve per width (per family and parameterization):
   :func:`accuracy_vs_noise_scale` gives one row per finished run; :func:`accuracy_curves` the curves (at each
   noise scale, the best seed-mean accuracy over the learning-rate / batch-size pairs that give it).
2. The optimal normalized noise scale against width (log-log; the paper's claim is a slope of about 1 without batch
   norm): :func:`optimum_vs_width` gives one row per summary record (one point per width; the optimum of the
   seed-mean accuracy, summary.py).

Records are ``harness.records.RunRecord`` objects or mappings with the same keys (``model``, ``seed``, ``status``,
``metrics``, ``config``), e.g. rows the leaderboard rebuilt from DuckDB. Nothing here imports torch.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from reproductions.sgd_width.variants import parse_model_id


def _get(record: Any, key: str) -> Any:
    return record.get(key) if isinstance(record, Mapping) else getattr(record, key)


def _series(record: Any) -> dict[str, Any]:
    family, width, parameterization = parse_model_id(_get(record, "model"))
    return {"model": _get(record, "model"), "family": family, "width": width, "parameterization": parameterization,
            "seed": _get(record, "seed")}  # fmt: skip


def _is_summary(record: Any) -> bool:
    return bool((_get(record, "config") or {}).get("summary"))


def accuracy_vs_noise_scale(records: Iterable[Any]) -> list[dict[str, Any]]:
    """One row per run record with an accuracy: series keys, ``normalized_noise_scale``, ``accuracy``, ``lr``,
    ``batch_size``, ``status``. Diverged and failed runs are left out (they have no accuracy)."""
    rows = []
    for record in records:
        metrics, config = _get(record, "metrics") or {}, _get(record, "config") or {}
        if _is_summary(record) or "accuracy" not in metrics or _get(record, "status") != "ok":
            continue
        rows.append({
            **_series(record), "normalized_noise_scale": metrics["normalized_noise_scale"],
            "accuracy": metrics["accuracy"], "lr": config.get("lr"), "batch_size": config.get("batch_size"),
            "status": _get(record, "status"),
        })  # fmt: skip
    return sorted(rows, key=lambda r: (r["family"], r["parameterization"], r["width"], r["normalized_noise_scale"]))


def accuracy_curves(records: Iterable[Any]) -> list[dict[str, Any]]:
    """Per (family, parameterization, width, noise scale): the best seed-mean accuracy over the (lr, batch) pairs
    giving that noise scale, as summary.py takes the optimum (a pair at which any seed diverged is left out), with
    the number of seeds behind it."""
    records = list(records)
    unstable = set()
    for record in records:
        if _get(record, "status") == "diverged" and not _is_summary(record):
            config = _get(record, "config") or {}
            unstable.add((_get(record, "model"), config.get("lr"), config.get("batch_size")))
    pairs: dict[tuple, list[float]] = defaultdict(list)
    for row in accuracy_vs_noise_scale(records):
        if (row["model"], row["lr"], row["batch_size"]) not in unstable:
            key = (row["family"], row["parameterization"], row["width"], round(row["normalized_noise_scale"], 12))
            pairs[key + (row["lr"], row["batch_size"])].append(row["accuracy"])
    best: dict[tuple, tuple[float, int]] = {}
    for (*key, _lr, _batch), accuracies in pairs.items():
        mean = (statistics.fmean(accuracies), len(accuracies))
        best[tuple(key)] = max(best.get(tuple(key), mean), mean)
    return [
        {"family": f, "parameterization": p, "width": w, "normalized_noise_scale": g, "accuracy": acc, "seeds": n}
        for (f, p, w, g), (acc, n) in sorted(best.items())
    ]


def optimum_vs_width(records: Iterable[Any]) -> list[dict[str, Any]]:
    """One row per summary record (one per width: a summary averages its seeds): series keys plus
    ``best_noise_scale``, ``optimal_noise_scale`` (None when the best grid point sat at the grid's edge),
    ``optimum_at_edge``, ``best_accuracy`` and ``max_batch_size`` (None when unknown)."""
    rows = []
    for record in records:
        metrics = _get(record, "metrics") or {}
        if not _is_summary(record) or "best_noise_scale" not in metrics:
            continue
        keys = ("best_noise_scale", "optimal_noise_scale", "optimum_at_edge", "best_accuracy", "max_batch_size")
        rows.append({**_series(record), **{key: metrics.get(key) for key in keys}})
    return sorted(rows, key=lambda r: (r["family"], r["parameterization"], r["width"], r["seed"]))


def accuracy_spec(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Vega-Lite: accuracy against normalized noise scale (log x), a line per width, a panel per family x
    parameterization. ``rows`` from :func:`accuracy_curves`."""
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "data": {"values": rows},
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": {"field": "normalized_noise_scale", "type": "quantitative", "scale": {"type": "log"},
                  "title": "normalized noise scale"},
            "y": {"field": "accuracy", "type": "quantitative", "title": "test accuracy (%)",
                  "scale": {"zero": False}},
            "color": {"field": "width", "type": "ordinal", "title": "widening factor"},
            "row": {"field": "family", "type": "nominal"},
            "column": {"field": "parameterization", "type": "nominal"},
        },
    }  # fmt: skip


def optimum_spec(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Vega-Lite: optimal normalized noise scale against width, log-log, a colour per family x parameterization, one
    point per width; points whose best grid point sat at the grid's edge are marked (they bound the optimum).
    ``rows`` from :func:`optimum_vs_width`."""
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "data": {"values": rows},
        "transform": [{"calculate": "datum.family + ' / ' + datum.parameterization", "as": "series"}],
        "mark": {"type": "point", "filled": True},
        "encoding": {
            "x": {"field": "width", "type": "quantitative", "scale": {"type": "log", "base": 2},
                  "title": "widening factor"},
            "y": {"field": "best_noise_scale", "type": "quantitative", "scale": {"type": "log"},
                  "title": "optimal normalized noise scale"},
            "color": {"field": "series", "type": "nominal"},
            "shape": {"field": "optimum_at_edge", "type": "nominal", "title": "at the grid's edge (a bound)"},
        },
    }  # fmt: skip


def figures(records: Iterable[Any]) -> list[tuple[str, dict[str, Any]]]:
    """The leaderboard's figures for this paper (``Reproduction.figures``): both specs, filled from ``records``."""
    records = list(records)
    return [
        (
            "Test accuracy against the normalized noise scale, one curve per width",
            accuracy_spec(accuracy_curves(records)),
        ),
        ("Optimal normalized noise scale against width", optimum_spec(optimum_vs_width(records))),
    ]
