"""Analyse a snapshot and write DIR/report.html, DIR/summary.json and DIR/aggregates/*.parquet.

report.html is self-contained (inline CSS, charts as base64 PNGs) so it can be mailed or
attached to a CI run. summary.json holds the four counts of ``accounting`` at the top
level beside the per-group tables. The aggregates are small: they are collected once
through Arrow (``DataFrame.toArrow``) and written with pyarrow, not by a Spark job each.
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import os
import re
import shutil
from pathlib import Path

import pyarrow.parquet as pq

from .errors import AnalyticsError
from .jobs import DEFAULT_DELAY_LEVELS, BrokerInput, analyze, parse_delay_levels
from rocketmq_emulator.store.store_dir import cluster_members, read_json, resolve_store
from .commitlog import list_segments, scan_segment
from . import datasource
from .progress import Progress
from .watchdog import ExecutorWatchdog

__all__ = ["analyze_snapshot", "write_report", "copy_report", "Progress"]


def _source_info(path: str) -> dict:
    """What the report says about its input: the manifest, or a quick look at a store."""
    sd = resolve_store(path, "snapshot")
    clock = _virtual_clock_ms(sd.root)
    if sd.manifest is not None:
        m = sd.manifest
        return {"kind": "snapshot", "path": str(sd.root), "source": m.get("source"), "virtual_clock_ms": clock,
                "taken_at_ms": m.get("taken_at_ms"), "took_ms": m.get("took_ms"),
                "store_was_live": m.get("store_was_live"), "min_offset": m["commitlog"]["min_offset"],
                "max_offset": m["commitlog"]["max_offset"], "records": m["commitlog"].get("records"),
                "damage": m.get("damage"), "delay_levels_ms": m.get("delay_levels_ms") or {},
                "queue_max_offsets": {(t, int(q)): v["max_offset"] for t, qs in m.get("consume_queues", {}).items()
                                      for q, v in qs.items()}}
    segs = list_segments(sd.commitlog)
    damage = None
    max_off = segs[0].base if segs else 0
    if segs:
        scan = scan_segment(segs[-1])
        damage = scan.damage.to_dict() if scan.damage else None
        max_off = segs[-1].base + scan.end
    return {"kind": "store", "path": str(sd.root), "source": str(sd.root), "virtual_clock_ms": clock,
            "taken_at_ms": None, "took_ms": None,
            "store_was_live": sd.is_open, "min_offset": segs[0].base if segs else 0,
            "max_offset": max_off, "records": None, "damage": damage, "delay_levels_ms": {},
            "queue_max_offsets": {}}


def _virtual_clock_ms(root: Path) -> int | None:
    """The time a `--clock virtual` server saved in its store (config/virtualClock.json,
    broker/virtual_time.py), None for a store of a real-clock server (or of `simulate`)."""
    doc = read_json(Path(root) / "config" / "virtualClock.json", None)
    now = doc.get("nowMillis") if isinstance(doc, dict) else None
    return now if isinstance(now, int) else None


def analyze_snapshot(path: str, out_dir: str, *, master: str | None = None, spark=None,
                     delay_levels: str | None = None, progress=None, driver_read_max: int | None = None,
                     remote: str | None = None, ends_with_session: bool = False) -> dict:
    """The ``analyze`` command: Spark analysis of ``path`` written to ``out_dir``
    (a cluster's snapshot: broker-a's at ``path``, the others' in ``path/brokers/NAME``).
    ``driver_read_max``: commit logs up to this many bytes are decoded in the driver
    (default ``datasource.LOCAL_READ_MAX_BYTES``), larger ones by the data source's
    tasks. ``remote``: a Spark Connect URL (sc://HOST:PORT) to run on instead of
    ``master``. ``ends_with_session``: ``spark`` is stopped
    after this analysis (which then leaves its views and checkpoints to it). Returns
    the summary (what summary.json holds)."""
    progress = progress or Progress()
    members = cluster_members(path)
    for _, where in members:                   # before Spark starts: a cut-short snapshot is refused
        datasource.check_complete(where)
    infos = {name: _source_info(where) for name, where in members}
    info = dict(infos[members[0][0]])
    if len(members) > 1:
        info["brokers"] = [name for name, _ in members]
    for name, one in infos.items():
        if one["damage"]:
            d = one["damage"]
            whose = f" of {name}" if len(members) > 1 else ""
            progress(f"the commit log{whose} is damaged: reading up to the {d['kind']} record at offset {d['offset']} "
                     f"({d['detail']})")
    info["damage"] = next((one["damage"] for one in infos.values() if one["damage"]), None)
    subscriptions: dict = {}
    inputs = []
    for name, where in members:
        subscriptions.update(read_json(Path(where) / "config" / "subscriptions.json", {}) or {})
        inputs.append(BrokerInput(name, str(Path(where).resolve()),
                                  read_json(Path(where) / "config" / "consumerOffset.json", {}) or {},
                                  infos[name]["queue_max_offsets"]))
    levels_seen = {k: v for one in infos.values() for k, v in one["delay_levels_ms"].items()}
    if delay_levels:
        delays = parse_delay_levels(delay_levels)
    elif levels_seen:
        # Levels seen in the snapshot's schedule queues override the default table.
        delays = parse_delay_levels(DEFAULT_DELAY_LEVELS)
        for lvl, ms in levels_seen.items():
            while len(delays) < int(lvl):
                delays.append(1000)
            delays[int(lvl) - 1] = int(ms)
    else:
        delays = None
    from .session import (SMALL_INPUT_JAVA_OPTIONS, SMALL_INPUT_SQL_CONF, build_remote_session, build_session,
                          session_conf)

    # What read_commitlog decodes in the driver is small enough for Spark's small-input settings.
    limit = datasource.LOCAL_READ_MAX_BYTES if driver_read_max is None else driver_read_max
    small = sum(datasource.log_bytes(where) for _, where in members) <= limit
    small_conf = SMALL_INPUT_SQL_CONF if small else {}

    def run(spark, ours: bool = False) -> dict:
        first = inputs[0]
        _clear_report(out_dir)
        with ExecutorWatchdog(spark, master), session_conf(spark, small_conf):
            analysis = analyze(spark, first.path, first.offset_table, delay_levels_ms=delays,
                               queue_max_offsets=first.queue_max_offsets, progress=progress, damage_reported=True,
                               subscriptions_doc=subscriptions, brokers=inputs if len(inputs) > 1 else None,
                               local_max_bytes=limit, ends_with_session=ours)
            return write_report(analysis, info, out_dir, progress)

    ours = None                                # a Connect session this call opens, closed at its end
    if spark is None and remote is not None:
        progress(f"connecting to the Spark Connect server {remote}")
        spark = ours = build_remote_session(remote)
        progress("Spark started")
    if spark is None:
        _import_charts_meanwhile()             # while the JVM starts
        progress(f"starting Spark ({master or 'local[*]'})")
        spark = build_session(master, conf={"spark.driver.extraJavaOptions": SMALL_INPUT_JAVA_OPTIONS} if small
                              else None)
        progress("Spark started")
    try:
        return run(spark, ours=ours is not None or ends_with_session)
    finally:
        if ours is not None:                   # the server releases what the session held
            ours.stop()


def _import_charts_meanwhile() -> None:
    """Import matplotlib (charts) on a thread, while this process waits for Spark: half a
    second of CPU off the report's end."""
    import threading

    def load():
        from . import charts  # noqa: F401

    threading.Thread(target=load, name="import-charts", daemon=True).start()


_REPORT_FILES = ("report.html", "summary.json")


def _clear_report(out_dir: str) -> None:
    """Remove an earlier run's report from ``out_dir`` before this one starts: a run that
    fails must not leave a report that looks like its result."""
    for name in _REPORT_FILES:
        (Path(out_dir) / name).unlink(missing_ok=True)


def copy_report(src_dir: str, out_dir: str) -> None:
    """The report written in ``src_dir`` (by an analysis of the same snapshot with the
    same options), copied to ``out_dir`` the way write_report writes one: the
    aggregates first, summary.json and report.html together at the end."""
    src, out = Path(src_dir), Path(out_dir)
    _clear_report(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src / "aggregates", out / "aggregates", dirs_exist_ok=True)
    for name in _REPORT_FILES:
        shutil.copyfile(src / name, out / f".{name}.tmp")
    for name in _REPORT_FILES[::-1]:
        os.replace(out / f".{name}.tmp", out / name)


def _write_aggregates(arrow: dict, out: Path) -> dict[str, list[dict]]:
    agg = out / "aggregates"
    agg.mkdir(parents=True, exist_ok=True)
    rows = {}
    for name, table in arrow.items():
        pq.write_table(table, agg / f"{name}.parquet")
        rows[name] = table.to_pylist()
    return rows


def write_report(analysis, info: dict, out_dir: str, progress=None) -> dict:
    progress = progress or Progress()
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AnalyticsError(f"cannot create the output directory {out_dir!r}: {exc.strerror}") from None
    totals, arrow = analysis.collect(progress)
    rows = _write_aggregates(arrow, out)
    snapshot = {k: v for k, v in info.items() if k != "queue_max_offsets"}
    summary = {**{k: totals[k] for k in ("produced", "succeeded", "dead_lettered", "send_backs")},
               "records": totals["records"], "snapshot": snapshot, "damaged": bool(info["damage"]),
               "tables": rows}
    summary_text = json.dumps(summary, indent=2, default=str) + "\n"
    progress("drawing charts")
    from . import charts

    figs = {
        "outcomes": charts.outcomes_chart(rows["per_group"]),
        "retried": charts.retried_chart(rows["retried"]),
        "funnel": charts.funnel_chart(rows["funnel"]),
        "lateness": charts.lateness_chart(rows["lateness_by_level"]),
        "lag": charts.lag_chart(rows["lag"]),
    }
    for name, png in figs.items():
        if isinstance(png, bytes):
            (out / "aggregates" / f"{name}.png").write_bytes(png)
    # summary.json and report.html appear together, at the end: never one without the other
    for name, text in (("summary.json", summary_text), ("report.html", _html(summary, rows, figs, totals))):
        (out / f".{name}.tmp").write_text(text)
    for name in _REPORT_FILES[::-1]:
        os.replace(out / f".{name}.tmp", out / name)
    progress(f"wrote {out / 'report.html'}, {out / 'summary.json'} and {out / 'aggregates'}/")
    return summary


# -- HTML --------------------------------------------------------------------------------------
_CSS = """
body{font:14px/1.45 -apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em} h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.meta{color:#666} .cards{display:flex;gap:1em;flex-wrap:wrap;margin:1.2em 0}
.card{border:1px solid #ddd;border-radius:6px;padding:.7em 1.2em;min-width:9em}
.card b{display:block;font-size:1.9em} .card span{color:#666}
.damage{background:#fdecea;border:1px solid #c62828;padding:.8em 1em;border-radius:6px}
table{border-collapse:collapse;margin:.6em 0;font-size:13px} th,td{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f5f5f5} td{white-space:nowrap} td.s{text-align:left} img{max-width:100%;margin:.5em 0}
.wide{overflow-x:auto;max-width:100%} code{overflow-wrap:anywhere}
.nochart{border-left:3px solid #bbb;background:#fafafa;padding:.6em 1em;max-width:60em}
.note{color:#666;font-size:12.5px;max-width:60em}
"""

_NOTES = {
    "per_group": "produced: business messages stored in the topic. succeeded: messages the group consumed "
                 "(committed offset past a copy) without a further send-back. dead-lettered: messages with a "
                 "copy in %DLQ%group (or, for a Pulsar subscription, in its -DLQ topic). send-backs: send-back "
                 "records stored (retries + DLQ moves). in flight: the rest.",
    "retried": "Messages by the number of retry send-backs they needed (DLQ moves not counted).",
    "funnel": "Per attempt (reconsumeTimes): messages delivered, consumed (committed), succeeded there, "
              "sent back for another attempt, or moved to the DLQ.",
    "lateness": "Each SCHEDULE_TOPIC_XXXX record paired with the copy re-stored from it. due = schedule "
                "store time + level delay; late = re-store time - due. pending = not re-stored yet; "
                "overdue = pending and due before the newest record of the snapshot.",
    "time_to_dlq": "From the first store of a message to its %DLQ% copy.",
    "poison": "The messages sent back most often, per group.",
    "redeliveries": "Pulsar subscriptions: redeliveries the broker counted (negative acks, ack timeouts; "
                    "no record is written for them), messages redelivered at least once, and the highest "
                    "redelivery count reached. Their dead letters are counted with the others above.",
    "duplicates": "A UNIQ_KEY stored more than once for the same group and attempt (producer re-sends, "
                  "repeated deliveries).",
    "lag": "max offset (from the commit log) - committed offset, per queue in the offset table.",
    "copies_by_broker": "Send-back copies (retries and dead letters) by the broker that holds their message "
                        "and the broker they landed on. In a cluster a copy lands on another broker when the "
                        "message's broker refused the send-back (write permission off, stopped) and the "
                        "client's inner producer published it elsewhere.",
    "pinning": "For each queue with lag: the message at the committed offset — the oldest one not yet "
               "acknowledged, which holds the group's committed offset (ProcessQueue minimum-offset commit). "
               "pins_queue_min: this group's offset is the lowest of all groups on that queue.",
}

_TITLES = {"per_group": "Per consumer group and topic", "retried": "Retried 1, 2, … n times",
           "funnel": "Retry funnel by reconsumeTimes", "lateness": "Delivery lateness per delay level",
           "time_to_dlq": "Time from first store to the DLQ", "poison": "Top poison messages",
           "duplicates": "Duplicates", "lag": "Consumer lag per queue", "pinning": "Messages pinning committed offsets",
           "redeliveries": "Pulsar redeliveries", "copies_by_broker": "Where the copies landed, per broker"}

_MS_COLUMNS = {"p50_ms", "p99_ms", "max_ms", "min_ms", "age_ms", "delay_ms"}
_TS_COLUMNS = {"first_store", "last_send_back", "store_timestamp"}


def _fmt(col: str, v) -> tuple[str, bool]:
    if v is None:
        return "—", False
    if col in _MS_COLUMNS and isinstance(v, (int, float)):
        return _dur(v), False
    if col in _TS_COLUMNS and isinstance(v, int):
        return _ts(v), True
    if isinstance(v, bool):
        return ("yes" if v else "no"), True
    if isinstance(v, float):
        return f"{v:,.1f}", False
    if isinstance(v, int):
        return f"{v:,}", False
    return str(v), True


def _dur(ms: float) -> str:
    neg, ms = ms < 0, abs(ms)
    if ms < 1000:
        s = f"{ms:.0f} ms"
    elif ms < 120_000:
        s = f"{ms / 1000:.1f} s"
    elif ms < 7_200_000:
        s = f"{ms / 60_000:.1f} min"
    else:
        s = f"{ms / 3_600_000:.2f} h"
    return ("-" if neg else "") + s


def _ts(ms: int) -> str:
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _table(rows: list[dict], limit: int = 200) -> str:
    if not rows:
        return "<p class=note>(none)</p>"
    cols = list(rows[0])
    out = ["<div class=wide><table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr>"]
    for r in rows[:limit]:
        cells = []
        for c in cols:
            text, left = _fmt(c, r[c])
            cells.append(f"<td{' class=s' if left else ''}>{html.escape(text)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table></div>")
    if len(rows) > limit:
        out.append(f"<p class=note>… {len(rows) - limit} more rows in aggregates/</p>")
    return "\n".join(out)


def _img(chart: charts.Chart, alt: str) -> str:
    """The chart as an inline PNG, or the sentence saying why there is none."""
    if chart is None:
        return ""
    if isinstance(chart, str):
        return "<p class=nochart>" + re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(chart)) + "</p>"
    png = chart
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _html(summary: dict, rows: dict, figs: dict, totals: dict) -> str:
    snap = summary["snapshot"]
    # two clocks: the snapshot was taken by this machine's wall clock; the records were
    # stored by the broker's, which is virtual (2024-...) on a `--clock virtual` server
    taken = f"{_ts(snap['taken_at_ms'])} (wall clock)" if snap.get("taken_at_ms") else "—"
    if snap.get("virtual_clock_ms") is not None:
        store_clock = f"the broker's virtual clock, at {_ts(snap['virtual_clock_ms'])} when last saved"
    else:
        store_clock = ("the broker's clock: a real-clock server's is the wall clock; a `--clock virtual` "
                       "server's and `simulate`'s start at 2024-01-01")
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>rocketmq-emulator analysis</title>"
             f"<style>{_CSS}</style></head><body>",
             "<h1>rocketmq-emulator: where the messages went</h1>",
             f"<p class=meta>{html.escape(snap['kind'])} <code>{html.escape(str(snap['path']))}</code> of store "
             f"<code>{html.escape(str(snap.get('source')))}</code>, taken {taken}"
             f"{' (store was live)' if snap.get('store_was_live') else ''}; commit log "
             f"{snap['min_offset']:,}–{snap['max_offset']:,}, {summary['records']:,} records; stored "
             f"{_ts(totals['first_store_timestamp']) if totals.get('first_store_timestamp') else '—'} to "
             f"{_ts(totals['last_store_timestamp']) if totals.get('last_store_timestamp') else '—'} "
             f"({html.escape(store_clock)}; the tables' times are on it too).</p>"]
    if snap.get("damage"):
        d = snap["damage"]
        parts.append(f"<p class=damage><b>Damaged commit log.</b> Read up to the {html.escape(d['kind'])} record at "
                     f"offset {d['offset']:,} (segment {d['segment']:020d}): {html.escape(d['detail'])}. "
                     "Everything below describes the log before that point.</p>")
    parts.append("<div class=cards>" + "".join(
        f"<div class=card><b>{summary[k]:,}</b><span>{label}</span></div>"
        for k, label in (("produced", "produced"), ("succeeded", "succeeded"), ("dead_lettered", "dead-lettered"),
                         ("send_backs", "send-backs"))) + "</div>")
    sections = [("per_group", "outcomes"), ("retried", "retried"), ("funnel", "funnel"), ("lateness", "lateness"),
                ("time_to_dlq", None), ("poison", None), ("redeliveries", None), ("duplicates", None), ("lag", "lag"),
                ("pinning", None), ("copies_by_broker", None)]
    for name, fig in sections:
        parts.append(f"<h2 id={name}>{_TITLES[name]}</h2><p class=note>{html.escape(_NOTES[name])}</p>")
        if fig:
            parts.append(_img(figs.get(fig), _TITLES[name]))
        if name == "lateness":
            parts.append("<p class=note>All groups, per level:</p>" + _table(rows["lateness_by_level"])
                         + "<p class=note>Per group and topic (group empty: a message sent with a delay):</p>")
        parts.append(_table(rows[name]))
    parts.append("<p class=note>Written by <code>rocketmq-emulator analyze</code>; the tables are also in "
                 "aggregates/*.parquet and summary.json.</p></body></html>")
    return "\n".join(parts)
