"""One definition, shared: for a store left by `rocketmq-emulator simulate`, the four
counts of analyze's summary.json equal what `simulate --json` printed. This analysis
reads through the data source (the other tests' small logs are decoded in the driver)."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.broker.cli import main
from rocketmq_emulator.spark_analytics import datasource
from rocketmq_emulator.spark_analytics.report import analyze_snapshot
from tests.support.wall import wall_ms
from rocketmq_emulator.store.snapshot import take_snapshot

pytestmark = pytest.mark.spark
COUNTS = ("produced", "succeeded", "dead_lettered", "send_backs")


def test_analyze_counts_equal_simulate_json(spark, tmp_path, capsys, monkeypatch):
    store = tmp_path / "store"
    rc = main(["simulate", "--seed", "21", "--messages", "400", "--duration", "20m", "--pattern", "w1",
               "--fail-probability", "0.05", "--batch-size", "2", "--crash-at", "90s", "--out", str(store),
               "--json", "--quiet"])
    printed = json.loads(capsys.readouterr().out)
    assert rc == 0 and printed["invariant_violations"] == 0
    assert printed["dead_lettered"] >= 4 and printed["send_backs"] > printed["dead_lettered"]
    take_snapshot(store, tmp_path / "snap", wall_ms=wall_ms)
    monkeypatch.setattr(datasource, "LOCAL_READ_MAX_BYTES", 0)
    summary = analyze_snapshot(str(tmp_path / "snap"), str(tmp_path / "report"), spark=spark)
    on_disk = json.loads((tmp_path / "report" / "summary.json").read_text())
    assert {k: on_disk[k] for k in COUNTS} == {k: printed[k] for k in COUNTS}
    assert {k: summary[k] for k in COUNTS} == {k: printed[k] for k in COUNTS}
