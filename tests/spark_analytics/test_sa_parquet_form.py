"""The commit log's columnar form (parquet_form.py): written once per snapshot by the
data source's tasks, read by the analyses after, rewritten when it no longer names the
snapshot's log; never written into a store directory or a snapshot it cannot write."""
from __future__ import annotations

import json
import shutil

import pytest

from rocketmq_emulator.spark_analytics import parquet_form
from rocketmq_emulator.spark_analytics.cli import analyze_main
from rocketmq_emulator.spark_analytics.datasource import read_commitlog, spark_schema
from rocketmq_emulator.spark_analytics.parquet_form import FORM_DIR, STAMP
from rocketmq_emulator.store.snapshot import take_snapshot
from tests.support.wall import wall_ms

pytestmark = pytest.mark.spark
NAMES = [f.name for f in spark_schema(False).fields]


@pytest.fixture()
def snap(scenario, tmp_path):
    take_snapshot(scenario.store, tmp_path / "snap", wall_ms=wall_ms)
    return tmp_path / "snap"


def rows(df):
    return [r.asDict() for r in df.orderBy("physical_offset").collect()]


def test_a_large_read_writes_the_form_once_and_reads_the_same_rows_from_it(spark, snap):
    direct = rows(spark.read.format("rocketmq-commitlog").load(str(snap)))
    form = snap / FORM_DIR
    assert not form.exists()
    first = rows(read_commitlog(spark, str(snap), NAMES, local_max_bytes=0))
    stamp = json.loads((form / STAMP).read_text())
    assert stamp["commitlog"]["max_offset"] == json.loads((snap / "manifest.json").read_text())["commitlog"]["max_offset"]
    written = {p.name: p.stat().st_mtime_ns for p in form.iterdir()}
    df = read_commitlog(spark, str(snap), NAMES, local_max_bytes=0)
    assert "parquet" in df._jdf.queryExecution().executedPlan().toString().lower()
    assert first == rows(df) == direct and len(direct) > 100
    assert {p.name: p.stat().st_mtime_ns for p in form.iterdir()} == written          # read, not written again


def test_a_form_that_no_longer_names_the_log_is_written_again(spark, snap):
    read_commitlog(spark, str(snap), NAMES, local_max_bytes=0)
    stamp_file = snap / FORM_DIR / STAMP
    stale = json.loads(stamp_file.read_text())
    stale["commitlog"]["records"] -= 1                      # as if written from another cut of the log
    stamp_file.write_text(json.dumps(stale))
    df = read_commitlog(spark, str(snap), NAMES, local_max_bytes=0)
    assert json.loads(stamp_file.read_text())["commitlog"]["records"] == stale["commitlog"]["records"] + 1
    assert df.count() == stale["commitlog"]["records"] + 1
    assert not [p for p in snap.iterdir() if p.name.startswith(f".{FORM_DIR}.")]      # no temporary left


def test_a_store_directory_and_a_read_only_snapshot_are_read_through_the_data_source(spark, scenario, snap,
                                                                                      monkeypatch):
    df = read_commitlog(spark, str(scenario.store), NAMES, local_max_bytes=0)
    assert "parquet" not in df._jdf.queryExecution().executedPlan().toString().lower()
    assert not (scenario.store / FORM_DIR).exists()
    # (the suite runs as root, whom a mode of 0555 does not stop: the check itself answers no)
    monkeypatch.setattr(parquet_form.os, "access", lambda path, mode: False)
    seen = []
    df = read_commitlog(spark, str(snap), NAMES, local_max_bytes=0, progress=seen.append)
    assert df.count() > 100 and not (snap / FORM_DIR).exists()
    assert seen == [f"{snap} is not writable: reading its commit log through the data source (no columnar form)"]


def test_analyze_through_the_form_reports_what_the_driver_read_reports(spark, snap, tmp_path, monkeypatch):
    assert analyze_main([str(snap), "--out", str(tmp_path / "small"), "--quiet"]) == 0
    assert analyze_main([str(snap), "--out", str(tmp_path / "large"), "--quiet", "--driver-read-max", "0"]) == 0
    assert (snap / FORM_DIR / STAMP).exists()
    small = json.loads((tmp_path / "small" / "summary.json").read_text())
    large = json.loads((tmp_path / "large" / "summary.json").read_text())
    assert small["tables"] == large["tables"] and small["produced"] == large["produced"] > 0


def test_a_spark_failure_mid_analysis_is_one_line_and_leaves_no_report(spark, snap, tmp_path, capsys):
    out = tmp_path / "out"
    assert analyze_main([str(snap), "--out", str(out), "--quiet", "--driver-read-max", "0"]) == 0
    assert (out / "summary.json").exists()
    for part in (snap / FORM_DIR).glob("part-*.parquet"):
        part.write_bytes(b"not parquet")                     # the derived form damaged behind its stamp
    capsys.readouterr()
    assert analyze_main([str(snap), "--out", str(out), "--quiet", "--driver-read-max", "0"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rocketmq-emulator analyze: error: Spark failed while running "
                                                   "the analysis: "), lines
    assert lines[0].endswith("remove its columnar/ directory and it is written again from the commit log)")
    assert not (out / "summary.json").exists() and not (out / "report.html").exists()
    shutil.rmtree(snap / FORM_DIR)                          # as the line says: written again, and read
    assert analyze_main([str(snap), "--out", str(out), "--quiet", "--driver-read-max", "0"]) == 0
    assert (out / "summary.json").exists() and (snap / FORM_DIR / STAMP).exists()
