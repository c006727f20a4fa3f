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


def test_analyze_counts_5x_retries_and_orderly_dead_letters_as_simulate_does(spark, tmp_path, capsys, monkeypatch):
    """A 5.x group (redeliveries through %RETRY%<group>+<topic>, its DLQ copies one
    reconsume time above 4.x's) and a 4.x orderly group (retries in place, its dead
    letters sent by the client) on one topic, with a crash: analyze counts them as
    simulate does, and every message ended exactly once per group."""
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({
        "messages": 300, "duration": "10m", "settle": "8h", "crashes": ["3m"],
        "groups": [{"name": "Pop_Group", "protocol": "5.x", "poison_every": 100, "fail_once_every": 10,
                    "fail_once_remainder": 5, "slow_probability": 0.02, "invisible_seconds": 30},
                   {"name": "Orderly", "orderly": True, "max_reconsume_times": 2, "poison_every": 100}]}))
    store = tmp_path / "store"
    rc = main(["simulate", "--scenario", str(scenario), "--out", str(store), "--json", "--quiet"])
    printed = json.loads(capsys.readouterr().out)
    assert rc == 0 and printed["invariant_violations"] == 0 and printed["settled"]
    assert printed["dead_lettered"] == 6 and printed["succeeded"] == 2 * 300 - 6
    take_snapshot(store, tmp_path / "snap", wall_ms=wall_ms)
    monkeypatch.setattr(datasource, "LOCAL_READ_MAX_BYTES", 0)
    summary = analyze_snapshot(str(tmp_path / "snap"), str(tmp_path / "report"), spark=spark)
    assert {k: summary[k] for k in COUNTS} == {k: printed[k] for k in COUNTS}
