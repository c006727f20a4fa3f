"""The data source, the analyses and the report, on the scripted run's live snapshot,
checked against the truth the run wrote down (and against ``accounting``)."""
from __future__ import annotations

import json
import math

import pyarrow.parquet as pq
import pytest

from sa_scenario import GROUP_A, GROUP_B, uniq
from rocketmq_emulator.spark_analytics.store_accounts import account_store
from rocketmq_emulator.spark_analytics.cli import analyze_main
from rocketmq_emulator.spark_analytics.columnar import arrow_schema, decode_slow
from rocketmq_emulator.spark_analytics.commitlog import list_segments, open_segment, scan_buffer
from rocketmq_emulator.spark_analytics.datasource import read_commitlog, spark_schema
from rocketmq_emulator.spark_analytics.jobs import READ_COLUMNS
from rocketmq_emulator.store.records import MessageRecord, encode_record
from test_sa_snapshot import _store_with_torn_tail

pytestmark = pytest.mark.spark


def pct(values, p):
    """Linear interpolation between closest ranks, as Spark's percentile()."""
    v = sorted(values)
    k = (len(v) - 1) * p
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


@pytest.fixture(scope="module")
def analyzed(spark, scenario, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    assert analyze_main([str(scenario.snap), "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    return out, summary


def test_arrow_schema_is_what_spark_expects(spark):
    from pyspark.sql.pandas.types import to_arrow_schema

    for body in (False, True):
        assert to_arrow_schema(spark_schema(body), timezone="UTC").equals(arrow_schema(body))


def test_data_source_reads_the_snapshot_like_decode_record(spark, scenario):
    df = spark.read.format("rocketmq-commitlog").option("includeBody", "true").load(str(scenario.snap))
    segs = list_segments(scenario.snap / "commitlog")
    assert df.rdd.getNumPartitions() == len(segs) > 1          # one partition per segment
    rows = [r.asDict() for r in df.orderBy("physical_offset").collect()]
    expected = []
    for seg in segs:
        b, mv = open_segment(seg.path)
        scan = scan_buffer(b, mv, seg.base)
        expected += decode_slow(mv, seg.base, scan.starts, include_body=True).to_pylist()
    assert len(rows) == len(expected) == scenario.truth.records_at_snapshot
    for got, want in zip(rows, expected):
        assert dict(got.pop("properties")) == dict(want.pop("properties"))
        assert got == want


def test_store_directory_reads_everything_written(spark, scenario):
    n = spark.read.format("rocketmq-commitlog").schema("topic string").load(str(scenario.store)).count()
    assert n == scenario.truth.records_at_snapshot + 30             # the writes after the snapshot


def test_damaged_store_reads_up_to_the_damage_and_says_so(spark, tmp_path):
    good_end = _store_with_torn_tail(tmp_path / "store")
    df = spark.read.format("rocketmq-commitlog").load(str(tmp_path / "store"))
    assert df.count() == 29
    # Spark plans the read in a Python worker, which warns on its stderr; the same reader
    # built here shows the warning, and plan_segments says where the damage is.
    from rocketmq_emulator.spark_analytics.datasource import CommitLogReader, plan_segments

    with pytest.warns(UserWarning, match=f"reading up to the damage: torn record at commit-log offset {good_end}"):
        CommitLogReader({"path": str(tmp_path / "store")}, spark_schema())
    parts, damage = plan_segments(str(tmp_path / "store"))
    assert damage.kind == "torn" and damage.offset == good_end and parts[-1].limit == good_end
    with pytest.raises(Exception, match="commit log damaged"):
        spark.read.format("rocketmq-commitlog").option("onDamage", "fail").load(str(tmp_path / "store")).count()


def _plan(df) -> str:
    return df._jdf.queryExecution().analyzed().toString()


def _rows(df) -> list[dict]:
    return [r.asDict() for r in df.orderBy("physical_offset").collect()]


def test_a_small_log_is_decoded_in_the_driver_into_the_same_rows(spark, scenario):
    for directory in (scenario.snap, scenario.store):
        small = read_commitlog(spark, str(directory), READ_COLUMNS)
        large = read_commitlog(spark, str(directory), READ_COLUMNS, local_max_bytes=0, columnar=False)
        # An RDD of Arrow batches, not a LocalRelation (whose rows every cache lookup compares)
        assert _plan(small).startswith("LogicalRDD") and "RelationV2" in _plan(large)
        assert small.schema == large.schema
        assert small.columns == READ_COLUMNS
        rows = _rows(small)
        assert rows == _rows(large)
        assert len(rows) == scenario.truth.records_at_snapshot + (30 if directory == scenario.store else 0)


def test_the_driver_read_stops_at_damage_and_warns_unless_told_it_was_reported(spark, tmp_path, recwarn):
    good_end = _store_with_torn_tail(tmp_path / "store")
    with pytest.warns(UserWarning, match=f"reading up to the damage: torn record at commit-log offset {good_end}"):
        df = read_commitlog(spark, str(tmp_path / "store"), ["physical_offset", "topic"])
    assert df.count() == 29 and _plan(df).startswith("LogicalRDD")
    recwarn.clear()
    assert read_commitlog(spark, str(tmp_path / "store"), ["topic"], damage_reported=True).count() == 29
    assert not [w for w in recwarn if "damage" in str(w.message)]


def _two_segments_the_first_corrupt(root, corrupt_at=5, n=8):
    """Segment 0 holds n records with the magic code of record ``corrupt_at`` broken;
    segment 1 holds n good ones. Returns the corrupt record's commit-log offset."""
    (root / "commitlog").mkdir(parents=True)
    (root / "config").mkdir()
    base, bad_at = 0, None
    for seg in range(2):
        buf = bytearray()
        for i in range(n):
            if seg == 0 and i == corrupt_at:
                bad_at = base + len(buf)
            buf += encode_record(MessageRecord(topic="T", body=b"%d-%d" % (seg, i), queue_id=0,
                                               queue_offset=seg * n + i, commit_log_offset=base + len(buf),
                                               properties={"UNIQ_KEY": f"U{seg}-{i}"}, store_timestamp=1000 + i))
        if seg == 0:
            buf[bad_at + 4:bad_at + 8] = b"\xde\xad\xbe\xef"
        (root / "commitlog" / f"{base:020d}").write_bytes(bytes(buf))
        base += len(buf)
    return bad_at


def test_damage_inside_an_earlier_segment_is_warned_of_and_both_paths_agree(spark, tmp_path):
    bad_at = _two_segments_the_first_corrupt(tmp_path / "store")
    store = str(tmp_path / "store")
    with pytest.warns(UserWarning, match=f"reading up to the damage: corrupt record at commit-log offset {bad_at}"):
        small = read_commitlog(spark, store, ["physical_offset", "queue_offset"], damage_reported=True)
    large = read_commitlog(spark, store, ["physical_offset", "queue_offset"], local_max_bytes=0)
    rows = _rows(small)
    assert rows == _rows(large)
    assert [r["queue_offset"] for r in rows] == [0, 1, 2, 3, 4] + list(range(8, 16))   # the segment stops there


def test_the_driver_read_restores_the_setting_when_spark_refuses(spark, scenario, monkeypatch):
    key = "spark.sql.execution.arrow.localRelationThreshold"
    default = spark.conf.get(key)

    def refuse(*args, **kwargs):
        assert spark.conf.get(key) == "0"
        raise RuntimeError("refused")

    monkeypatch.setattr(spark, "createDataFrame", refuse)
    with pytest.raises(RuntimeError, match="refused"):
        read_commitlog(spark, str(scenario.snap), ["topic"])
    assert spark.conf.get(key) == default


def test_the_driver_read_leaves_the_sessions_arrow_setting_as_it_was(spark, scenario):
    key = "spark.sql.execution.arrow.localRelationThreshold"
    default = spark.conf.get(key)
    read_commitlog(spark, str(scenario.snap), ["topic"])
    assert spark.conf.get(key) == default
    spark.conf.set(key, "1234")
    try:
        read_commitlog(spark, str(scenario.snap), ["topic"])
        assert spark.conf.get(key) == "1234"
    finally:
        spark.conf.unset(key)


def test_an_empty_store_reads_as_no_rows(spark, tmp_path):
    (tmp_path / "store" / "commitlog").mkdir(parents=True)
    (tmp_path / "store" / "config").mkdir()
    for limit in (None, 0):
        df = read_commitlog(spark, str(tmp_path / "store"), READ_COLUMNS, local_max_bytes=limit)
        assert df.count() == 0 and df.columns == READ_COLUMNS


def test_missing_directory_is_one_clear_line(spark, tmp_path, capsys):
    with pytest.raises(Exception, match="does not exist"):
        spark.read.format("rocketmq-commitlog").load(str(tmp_path / "nope")).count()
    assert analyze_main([str(tmp_path / "nope"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rocketmq-emulator analyze:") and "does not exist" in err and "\n" not in err
    (tmp_path / "foreign").mkdir()
    assert analyze_main([str(tmp_path / "foreign"), "--out", str(tmp_path / "o")]) == 2
    assert "not a RocketMQ store" in capsys.readouterr().err
    assert analyze_main([str(tmp_path / "foreign")]) == 2                       # --out is required
    assert "\n" not in capsys.readouterr().err.strip()


def test_the_four_counts(analyzed, scenario):
    _, s = analyzed
    t = scenario.truth
    assert {k: s[k] for k in ("produced", "succeeded", "dead_lettered", "send_backs")} == {
        "produced": 59, "succeeded": sum(t.succeeded.values()), "dead_lettered": 2, "send_backs": 46}
    assert s["records"] == t.records_at_snapshot and s["damaged"] is False


def test_spark_and_accounting_agree(analyzed, scenario):
    _, s = analyzed
    a = account_store(scenario.snap)
    assert {k: s[k] for k in a.summary()} == a.summary()
    spark_rows = {(r["group"], r["topic"]): r for r in s["tables"]["per_group"]}
    for g in a.per_group:
        r = spark_rows.pop((g.group, g.topic))
        assert (r["produced"], r["succeeded"], r["dead_lettered"], r["send_backs"], r["in_flight"]) == \
            (g.produced, g.succeeded, g.dead_lettered, g.send_backs, g.in_flight)
        assert {x["retries"]: x["messages"] for x in s["tables"]["retried"]
                if (x["group"], x["topic"]) == (g.group, g.topic)} == g.retried
    assert not spark_rows


def test_per_group_retried_and_funnel(analyzed, scenario):
    t = scenario.truth
    tables = analyzed[1]["tables"]
    pg = {(r["group"], r["topic"]): r for r in tables["per_group"]}
    assert pg[(GROUP_B, "orders")] == {"group": GROUP_B, "topic": "orders", "produced": 45,
                                       "succeeded": t.succeeded[GROUP_B], "dead_lettered": 2, "send_backs": 46,
                                       "in_flight": 4}
    assert pg[(GROUP_A, "payments")]["in_flight"] == 4                        # stuck at queue 1 offset 2
    assert {(r["retries"], r["messages"]) for r in tables["retried"]} == {(1, 4), (2, 4), (16, 2)}
    funnel = {(r["group"], r["reconsume_times"]): r for r in tables["funnel"]}
    assert {k: r["delivered"] for k, r in funnel.items()} == dict(t.funnel)
    assert funnel[(GROUP_B, 0)]["sent_back"] == 10                            # 4 + 4 + 2 poison
    assert funnel[(GROUP_B, 1)]["sent_back"] == 6 and funnel[(GROUP_B, 1)]["succeeded"] == 4
    assert funnel[(GROUP_B, 16)]["dead_lettered"] == 2 and funnel[(GROUP_B, 16)]["sent_back"] == 0
    assert sum(r["succeeded"] for r in tables["funnel"]) == sum(t.succeeded.values())


def test_lateness_per_level(analyzed, scenario):
    by_level = {r["level"]: r for r in analyzed[1]["tables"]["lateness_by_level"]}
    truth: dict[int, list[int]] = {}
    for level, late in scenario.truth.lateness:
        truth.setdefault(level, []).append(late)
    assert set(by_level) == set(truth)
    for level, lates in truth.items():
        r = by_level[level]
        assert r["delivered"] == r["scheduled"] == len(lates) and r["pending"] == 0
        assert r["max_ms"] == max(lates)
        assert r["p50_ms"] == pytest.approx(pct(lates, 0.5)) and r["p99_ms"] == pytest.approx(pct(lates, 0.99))
    assert by_level[2]["p50_ms"] > 19_000 and by_level[3]["max_ms"] == 15_000    # the 25 s outage
    assert by_level[18]["max_ms"] == 0 and by_level[18]["delay_ms"] == 7_200_000
    groups = {(r["group"], r["topic"]) for r in analyzed[1]["tables"]["lateness"]}
    assert groups == {("", "payments"), (GROUP_B, "orders")}


def test_time_to_dlq_and_poison(analyzed, scenario):
    t = scenario.truth
    tables = analyzed[1]["tables"]
    waits = [t.dead[(GROUP_B, u)] - t.first_store[u] for (_, u) in t.dead]
    [r] = tables["time_to_dlq"]
    assert (r["group"], r["topic"], r["dead_lettered"]) == (GROUP_B, "orders", 2)
    assert r["max_ms"] == max(waits) and r["min_ms"] == min(waits)
    assert r["p50_ms"] == pytest.approx(pct(waits, 0.5))
    assert max(waits) > 4.5 * 3_600_000                                        # the whole 16-retry ladder
    top = [p for p in tables["poison"] if p["group"] == GROUP_B]
    assert {top[0]["uniq_key"], top[1]["uniq_key"]} == {uniq("orders", 5), uniq("orders", 15)}
    assert [(p["send_backs"], p["dead_lettered"], p["max_reconsume_times"]) for p in top[:2]] == [(17, 1, 17)] * 2
    assert top[2]["send_backs"] == 2 and len(top) == 10


def test_duplicates(analyzed):
    [d] = analyzed[1]["tables"]["duplicates"]
    assert (d["group"], d["topic"], d["uniq_key"], d["reconsume_times"], d["copies"]) == \
        (GROUP_B, "orders", uniq("orders", 11), 0, 2)


def test_lag_and_pinning(analyzed, scenario):
    t = scenario.truth
    tables = analyzed[1]["tables"]
    lag = {(r["group"], r["topic"], r["queue_id"]): (r["committed"], r["max_offset"], r["lag"]) for r in tables["lag"]}
    expected = {(g, tp, q): (c, t.max_offset[(tp, q)], t.max_offset[(tp, q)] - c)
                for (tp, g, q), c in t.committed.items()}
    assert lag == expected
    assert {k: v[2] for k, v in lag.items() if v[2]} == {(GROUP_B, "orders", 0): 4, (GROUP_A, "payments", 1): 4}
    pins = {(r["group"], r["topic"], r["queue_id"]): r for r in tables["pinning"]}
    assert {k: r["uniq_key"] for k, r in pins.items()} == t.pinning
    assert all(r["pins_queue_min"] for r in pins.values())
    assert pins[(GROUP_A, "payments", 1)]["age_ms"] > 4 * 3_600_000           # stuck since the start


def test_report_files(analyzed):
    out, summary = analyzed
    html = (out / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') == 5 and "http" not in html.replace("http-equiv", "")
    import base64
    import re
    for b64 in re.findall(r'src="data:image/png;base64,([^"]+)"', html):
        assert base64.b64decode(b64)[:8] == b"\x89PNG\r\n\x1a\n"
    for title in ("Per consumer group and topic", "Retry funnel", "Delivery lateness", "Top poison messages",
                  "Consumer lag", "pinning", "Duplicates", "Time from first store to the DLQ"):
        assert title in html
    for name, rows in summary["tables"].items():
        assert pq.read_table(out / "aggregates" / f"{name}.parquet").to_pylist() == rows
    assert (out / "aggregates" / "lateness.png").stat().st_size > 5000
