"""Runs: the run records with their provenance, filterable, a page at a time, downloadable as CSV, Parquet or a
model index; one run's training curves."""

import io
import math

import streamlit as st
import yaml

from leaderboard import charts, queries, ui


def filters() -> dict:
    """The filters (from the URL, then the widgets) and, for ``?claim=``, that claim (its verdict's runs)."""
    options = queries.filter_options(db)
    columns = st.columns(5)
    with columns[0]:
        papers = ui.url_multiselect("Paper", options["papers"], "paper")
    with columns[1]:
        tiers = ui.url_multiselect("Tier", options["tiers"], "tier")
    with columns[2]:
        models = ui.url_multiselect("Model", options["models"], "model")
    with columns[3]:
        tasks = ui.url_multiselect("Task (dataset)", options["tasks"], "task")
    with columns[4]:
        statuses = ui.url_multiselect("Run status", ["ok", "failed", "diverged"], "run_status")
    chosen = {"papers": papers, "tiers": tiers, "models": models, "tasks": tasks, "statuses": statuses}
    claim = st.query_params.get("claim")
    if claim and len(papers) == 1:
        chosen["claim"] = (papers[0], claim)
        st.info(f"The runs the verdict of claim `{papers[0]}/{claim}` rests on.")
        if st.button("Show all runs"):
            del st.query_params["claim"]
            st.rerun()
    return chosen


def show_page(chosen: dict) -> list[str]:
    """One page of the matching runs, newest first; returns its run ids. Any page, the last of a million runs too,
    is sought by its sort key (``queries.runs_page``), so the page number can jump anywhere."""
    total = queries.runs_count(db, **chosen)
    pages = max(1, math.ceil(total / ui.PAGE_SIZE))
    page = st.number_input(f"Page (of {pages})", 1, pages, 1, key="runs-page") if pages > 1 else 1
    table = queries.runs_page(db, page, total, ui.PAGE_SIZE, **chosen)
    st.dataframe(
        table,
        hide_index=True,
        placeholder="",
        column_config={
            "run_id": st.column_config.TextColumn("Run", width="medium"),
            "git_sha": st.column_config.TextColumn("Commit", help="git commit the run was made at"),
            "git_dirty": st.column_config.CheckboxColumn("Dirty", help="uncommitted changes at run time"),
            "config_hash": "Config hash",
            "data_hash": "Data hash",
            "started_at": st.column_config.DatetimeColumn("Started", format="YYYY-MM-DD HH:mm:ss"),
            "finished_at": st.column_config.DatetimeColumn("Finished", format="YYYY-MM-DD HH:mm:ss"),
        },
    )
    first = (page - 1) * ui.PAGE_SIZE
    shown = f"runs {first + 1}–{first + len(table)} of {total}" if len(table) < total else f"{total} run(s)"
    st.caption(f"{shown}. Records: results/runs/<run_id>.json (immutable).")
    return table["run_id"].tolist()


def parquet_bytes(chosen: dict) -> bytes:
    buffer = io.BytesIO()
    queries.runs(db, **chosen).to_parquet(buffer, index=False)
    return buffer.getvalue()


def model_index_yaml(chosen: dict) -> str:
    ids = queries.runs(db, **chosen)["run_id"].tolist()
    return yaml.safe_dump(queries.model_index(db, ids), sort_keys=False, allow_unicode=True)


def show_downloads(chosen: dict) -> None:
    """Every matching run (not only the page), made when a button is pressed (deferred), not on every view."""
    left, middle, right = st.columns(3)
    left.download_button("Download CSV", lambda: queries.runs(db, **chosen).to_csv(index=False), "runs.csv", "text/csv")
    middle.download_button(
        "Download Parquet", lambda: parquet_bytes(chosen), "runs.parquet", "application/vnd.apache.parquet"
    )
    right.download_button(
        "Export model-index.yml",
        lambda: model_index_yaml(chosen),
        "model-index.yml",
        "application/yaml",
        help="Papers with Code model-index format: one model per row group, mean metrics per dataset and tier",
    )


def show_training_curves(run_ids: list[str]) -> None:
    """The chosen run's training curves from the CSV log its record names (``artifacts.training_log``)."""
    st.subheader("Training curves")
    wanted = st.query_params.get("run")
    listed = ([wanted] if wanted and wanted not in run_ids else []) + run_ids
    if not listed:
        return
    run_id = st.selectbox("Run", listed, index=listed.index(wanted) if wanted in listed else 0, key="run-detail")
    path = queries.run_artifacts(db, run_id).get("training_log")
    if not path:
        st.caption("This run's record names no training log (arch profiles and evaluations of given weights train "
                   "nothing).")  # fmt: skip
        return
    found = queries.find_log(db, path)
    if found is None:
        st.caption(f"Training log `{path}` (named by the record; not on this machine).")
        return
    curves = queries.training_curves(found)
    st.caption(f"From `{path}` (Lightning's CSV logger).")
    if not curves.empty:
        st.altair_chart(charts.training_curves(curves))
    st.download_button("Download metrics.csv", found.read_bytes(), f"{run_id}.metrics.csv", "text/csv")


db = ui.db_path()
st.title("Runs")
chosen = filters()
run_ids = show_page(chosen)
show_downloads(chosen)
show_training_curves(run_ids)
