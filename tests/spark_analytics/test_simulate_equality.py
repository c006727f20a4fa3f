"""One definition, shared: for a store left by `rocketmq-emulator simulate`, the four
counts of analyze's summary.json equal what `simulate --json` printed. This analysis
reads through the data source (the other tests' small logs are decoded in the driver)."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.broker.cli.main import main
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


def simulate_and_analyze(spark, tmp_path, capsys, monkeypatch, scenario):
    """``simulate --scenario`` (settled, no violation), a snapshot, ``analyze`` through the
    data source: (what simulate printed, analyze's summary)."""
    store = tmp_path / "store"
    rc = main(["simulate", "--scenario", str(scenario), "--out", str(store), "--json", "--quiet"])
    printed = json.loads(capsys.readouterr().out)
    assert rc == 0 and printed["invariant_violations"] == 0 and printed["settled"]
    take_snapshot(store, tmp_path / "snap", wall_ms=wall_ms)
    monkeypatch.setattr(datasource, "LOCAL_READ_MAX_BYTES", 0)
    return printed, analyze_snapshot(str(tmp_path / "snap"), str(tmp_path / "report"), spark=spark)


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
    printed, summary = simulate_and_analyze(spark, tmp_path, capsys, monkeypatch, scenario)
    assert printed["dead_lettered"] == 6 and printed["succeeded"] == 2 * 300 - 6
    assert {k: summary[k] for k in COUNTS} == {k: printed[k] for k in COUNTS}


TOPIC = "pulsar|public|default|SimTopic"


def test_analyze_counts_pulsar_dead_letters_and_redeliveries_as_simulate_does(spark, tmp_path, capsys, monkeypatch):
    """On one Pulsar topic: a Pulsar group (redeliveries counted by the broker, in no
    record; dead letters the client copies to <topic>-<subscription>-DLQ), a retry-letter
    group (the SDK's reconsume_later: copies in <topic>-<subscription>-RETRY) and a 4.x
    group, with a crash: analyze's four counts equal simulate's, and its redeliveries
    table holds the counts the subscription saved."""
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({
        "messages": 300, "duration": "10m", "crashes": ["3m"], "topics": [{"name": TOPIC, "queues": 1}],
        "producers": [{"topic": TOPIC}],
        "groups": [{"name": "Pulse", "topic": TOPIC, "protocol": "pulsar", "poison_every": 100,
                    "fail_once_every": 10, "fail_once_remainder": 5, "nack_delay_seconds": 20,
                    "max_reconsume_times": 4},
                   {"name": "Classic", "topic": TOPIC, "poison_every": 100},
                   {"name": "Letters", "topic": TOPIC, "protocol": "pulsar", "retry_letters": "increasing",
                    "poison_every": 100, "fail_once_every": 10, "fail_once_remainder": 5,
                    "max_reconsume_times": 3}]}))
    printed, summary = simulate_and_analyze(spark, tmp_path, capsys, monkeypatch, scenario)
    assert printed["dead_lettered"] == 9 and printed["succeeded"] == 3 * 297
    assert {k: summary[k] for k in COUNTS} == {k: printed[k] for k in COUNTS}
    per = {(r["group"], r["topic"]): (r["produced"], r["succeeded"], r["dead_lettered"])
           for r in summary["tables"]["per_group"]}
    # (the retry-letter subscription's own offsets on the retry topic: a row with nothing produced there)
    assert per == {**{(g, TOPIC): (300, 297, 3) for g in ("Pulse", "Classic", "Letters")},
                   ("Letters", TOPIC + "-Letters-RETRY"): (0, 0, 0)}
    [row] = [r for r in summary["tables"]["redeliveries"] if r["group"] == "Pulse"]
    pulse = printed["groups"]["Pulse"]
    assert (row["group"], row["topic"], row["redeliveries"], row["max_redelivery_count"]) == \
        ("Pulse", TOPIC, pulse["redeliveries"], 4)
    assert "Pulsar redeliveries" in (tmp_path / "report" / "report.html").read_text()


def test_analyze_of_a_cluster_counts_as_simulate_does_and_shows_where_copies_landed(spark, tmp_path, capsys,
                                                                                     monkeypatch):
    """Two brokers, broker-a read-only for a while (its refused send-backs published by the
    clients to broker-b) and broker-b down for a while, with a crash: `snapshot` takes
    both brokers' stores, analyze's counts follow copies across brokers and equal
    simulate's, and the copies_by_broker table shows the copies that crossed."""
    store = tmp_path / "store"
    rc = main(["simulate", "--seed", "5", "--messages", "400", "--duration", "20m", "--pattern", "w1",
               "--brokers", "2", "--broker-write-off", "broker-a@3m..8m", "--broker-down", "broker-b@10m+3m",
               "--crash-at", "15m", "--out", str(store), "--json", "--quiet"])
    printed = json.loads(capsys.readouterr().out)
    assert rc == 0 and printed["invariant_violations"] == 0 and printed["settled"]
    assert main(["snapshot", "--data-dir", str(store), "--out", str(tmp_path / "snap")]) == 0
    assert "(broker-b)" in capsys.readouterr().out
    monkeypatch.setattr(datasource, "LOCAL_READ_MAX_BYTES", 0)
    summary = analyze_snapshot(str(tmp_path / "snap"), str(tmp_path / "report"), spark=spark)
    assert {k: summary[k] for k in COUNTS} == {k: printed[k] for k in COUNTS}
    assert summary["snapshot"]["brokers"] == ["broker-a", "broker-b"]
    crossed = {(r["message_broker"], r["copy_broker"]): r["copies"] for r in summary["tables"]["copies_by_broker"]}
    assert crossed.get(("broker-a", "broker-b"), 0) > 0
    assert sum(crossed.values()) == printed["send_backs"]
    assert {r["broker"] for r in summary["tables"]["lag"]} == {"broker-a", "broker-b"}
    assert "Where the copies landed, per broker" in (tmp_path / "report" / "report.html").read_text()
    # one broker's snapshot alone
    assert main(["snapshot", "--data-dir", str(store), "--out", str(tmp_path / "only-b"), "--broker", "broker-b"]) == 0
    assert not (tmp_path / "only-b" / "brokers").exists()
