"""The report's HTML and charts from plain rows (no Spark): a damaged snapshot says so
at the top, empty tables render, and every chart is a PNG."""
from __future__ import annotations

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
    assert charts.lag_chart([]) is None and charts.lateness_chart([{"level": 1, "delivered": 0}]) is None
