"""The report's HTML and charts from plain rows (no Spark): a damaged snapshot says so
at the top, empty tables render, every chart is a PNG, data with nothing to compare
gets a sentence instead of a chart, and wide content scrolls inside its box."""
from __future__ import annotations

import re

from rocketmq_emulator.spark_analytics import charts
from rocketmq_emulator.spark_analytics.jobs import TABLES
from rocketmq_emulator.spark_analytics.report import _html


def _summary(damage):
    return {"produced": 3, "succeeded": 2, "dead_lettered": 1, "send_backs": 4, "records": 9,
            "snapshot": {"kind": "snapshot", "path": "/s", "source": "/store", "taken_at_ms": 1_704_067_200_000,
                         "store_was_live": True, "min_offset": 0, "max_offset": 1234, "damage": damage}}


def test_damage_banner_and_empty_tables():
    dmg = {"offset": 1234, "segment": 0, "kind": "torn", "detail": "record size 114, only 104 bytes written"}
    html = _html(_summary(dmg), {name: [] for name in TABLES}, {}, {"first_store_timestamp": None})
    assert "Damaged commit log" in html and "offset 1,234" in html and "torn" in html
    assert html.count("(none)") >= 9 and "store was live" in html
    assert "Damaged" not in _html(_summary(None), {name: [] for name in TABLES}, {}, {})


def test_charts_are_pngs():
    pg = [{"group": "g", "topic": "t", "produced": 5, "succeeded": 3, "dead_lettered": 1, "in_flight": 1}]
    funnel = [{"group": "g", "topic": "t", "reconsume_times": k, "delivered": 5 - k} for k in range(4)]
    late = [{"level": 3, "delivered": 2, "delay_ms": 10_000, "p50_ms": 5.0, "p99_ms": 9.0, "max_ms": 9}]
    lag = [{"group": "g", "topic": "t", "queue_id": 0, "lag": 3}]
    retried = [{"group": "g", "topic": "t", "retries": 1, "messages": 2}]
    for png in (charts.outcomes_chart(pg), charts.funnel_chart(funnel), charts.lateness_chart(late),
                charts.lag_chart(lag), charts.retried_chart(retried)):
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert charts.lag_chart([]) is None and charts.lateness_chart([]) is None


def _level(level, delivered, late_ms):
    return {"level": level, "scheduled": delivered, "delivered": delivered, "pending": 0, "delay_ms": 1000 * level,
            "p50_ms": float(late_ms), "p99_ms": float(late_ms), "max_ms": late_ms}


def test_nothing_to_compare_gets_a_sentence_not_an_axis_around_zero():
    # A virtual clock re-stores every delayed message exactly when due: lateness all 0.
    said = charts.lateness_chart([_level(3, 220, 0), _level(4, 20, 0)])
    assert isinstance(said, str) and "All 240 delayed messages were re-stored exactly when due" in said
    assert "virtual clock" in said
    pending = charts.lateness_chart([{"level": 3, "scheduled": 7, "delivered": 0, "pending": 7}])
    assert isinstance(pending, str) and "None of the 7 scheduled messages has been re-stored yet" in pending
    lag = charts.lag_chart([{"group": "g", "topic": "t", "queue_id": q, "lag": 0} for q in range(4)])
    assert lag == "No consumer lag: on all 4 queues in the offset table the committed offset is at the queue's end."
    funnel = charts.funnel_chart([{"group": "g", "topic": "t", "reconsume_times": 0, "delivered": 2000}])
    assert isinstance(funnel, str) and "all 2,000 deliveries were first deliveries" in funnel
    outcomes = charts.outcomes_chart([{"group": "g", "topic": "t", "produced": 0, "succeeded": 0,
                                       "dead_lettered": 0, "in_flight": 0}])
    assert isinstance(outcomes, str) and "No message has been produced" in outcomes
    # one non-zero value is enough for a chart (its axis starts at zero)
    assert charts.lateness_chart([_level(3, 2, 0), _level(4, 1, 7)])[:4] == b"\x89PNG"
    assert charts.lag_chart([{"group": "g", "topic": "t", "queue_id": 0, "lag": 1}])[:4] == b"\x89PNG"


def test_a_sentence_stands_where_the_chart_would_be():
    figs = {"lateness": charts.lateness_chart([_level(3, 5, 0)]), "lag": None}
    page = _html(_summary(None), {name: [] for name in TABLES}, figs, {})
    lateness = page[page.index("<h2 id=lateness>"):page.index("<h2 id=time_to_dlq>")]
    assert "<img" not in lateness and "<p class=nochart>All 5 delayed messages" in lateness
    assert "<code>simulate</code>" in lateness                  # `simulate` in the sentence


def test_wide_content_scrolls_inside_its_box_not_the_page():
    rows = {name: [] for name in TABLES}
    rows["poison"] = [{"group": "g", "topic": "t", "uniq_key": "F" * 300, "keys": "k"}]
    summary = _summary(None)
    summary["snapshot"]["path"] = "/" + "x" * 300              # a long path has no place to wrap
    page = _html(summary, rows, {}, {})
    css = page[page.index("<style>"):page.index("</style>")]
    assert re.search(r"\.wide\{[^}]*overflow-x:auto", css)
    assert re.search(r"code\{[^}]*overflow-wrap:anywhere", css)
    # every table sits directly in a scrolling box
    assert page.count("<table") == page.count("<div class=wide><table") >= 1


def test_an_analysis_leaves_nothing_cached_in_the_session(spark, scenario, tmp_path):
    """The frames the tables share are cached for the one job and released after it: a
    long-lived session (the suite's, a Spark Connect server) would otherwise keep every
    run's (a Connect server with 1 GiB ran out of heap on the fourth analyze)."""
    from rocketmq_emulator.spark_analytics.report import analyze_snapshot

    def persisted():
        return spark.sparkContext._jsc.getPersistentRDDs().size()

    before = persisted()
    analyze_snapshot(str(scenario.snap), str(tmp_path / "r1"), spark=spark, progress=lambda msg: None)
    analyze_snapshot(str(scenario.snap), str(tmp_path / "r2"), spark=spark, progress=lambda msg: None)
    assert persisted() == before


def test_the_report_says_which_clock_its_times_are_on(tmp_path):
    """Taken: this machine's wall clock (2026); stored: the broker's clock, which a
    `--clock virtual` server keeps in config/virtualClock.json (its times start in 2024)."""
    import json

    from rocketmq_emulator.spark_analytics.report import _source_info

    store = tmp_path / "store"
    (store / "commitlog").mkdir(parents=True)
    assert _source_info(str(store))["virtual_clock_ms"] is None              # a real-clock server's store
    (store / "config").mkdir()
    (store / "config" / "virtualClock.json").write_text(json.dumps({"nowMillis": 1_704_074_400_000}))
    info = _source_info(str(store))
    assert info["virtual_clock_ms"] == 1_704_074_400_000
    totals = {"first_store_timestamp": 1_704_067_200_000, "last_store_timestamp": 1_704_074_400_000}
    summary = dict(_summary(None), snapshot=dict(_summary(None)["snapshot"], taken_at_ms=1_795_000_000_000,
                                                  virtual_clock_ms=info["virtual_clock_ms"]))
    meta = re.search(r"<p class=meta>(.*?)</p>", _html(summary, {n: [] for n in TABLES}, {}, totals), re.S).group(1)
    assert "taken 2026-11-18 11:06:40.000Z (wall clock)" in meta
    assert ("stored 2024-01-01 00:00:00.000Z to 2024-01-01 02:00:00.000Z (the broker&#x27;s virtual clock, at "
            "2024-01-01 02:00:00.000Z when last saved") in meta
    real = dict(summary, snapshot=dict(summary["snapshot"], virtual_clock_ms=None))
    assert "a real-clock server&#x27;s is the wall clock" in _html(real, {n: [] for n in TABLES}, {}, totals)
