"""Runs: every run record with its provenance, filterable, and downloadable as CSV, Parquet or a model index."""

import io

import streamlit as st
import yaml

from leaderboard import queries, ui

db = ui.db_path()
st.title("Runs")
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

run_ids = None
claim = st.query_params.get("claim")
if claim and len(papers) == 1:
    run_ids = queries.claim_run_ids(db, papers[0], claim)
    st.info(f"The {len(run_ids)} run(s) the verdict of claim `{papers[0]}/{claim}` rests on.")
    if st.button("Show all runs"):
        del st.query_params["claim"]
        st.rerun()

table = queries.runs(db, papers, tiers, models, tasks, statuses, run_ids=run_ids)
st.dataframe(
    table,
    hide_index=True,
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
st.caption(f"{len(table)} run(s). Records: results/runs/<run_id>.json (immutable).")

parquet = io.BytesIO()
table.to_parquet(parquet, index=False)
index = yaml.safe_dump(queries.model_index(db, table["run_id"].tolist()), sort_keys=False, allow_unicode=True)
left, middle, right = st.columns(3)
left.download_button("Download CSV", table.to_csv(index=False), "runs.csv", "text/csv")
middle.download_button("Download Parquet", parquet.getvalue(), "runs.parquet", "application/vnd.apache.parquet")
right.download_button(
    "Export model-index.yml",
    index,
    "model-index.yml",
    "application/yaml",
    help="Papers with Code model-index format: one model per row group, mean metrics per dataset and tier",
)
