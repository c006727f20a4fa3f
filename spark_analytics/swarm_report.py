"""``analyze SWARM_DIR``: the report of a swarm's table (``simulate --seeds``, issue 50):
violations by invariant and by fault action, CPU time per seed as a histogram, in
report.html with pictures, summary.json and aggregates/*.parquet beside it.

The table is read by Spark (``<dir>/seeds.parquet``), so a swarm of millions of rows on a
cluster is aggregated where it lies; only the small aggregates reach this process.
"""
from __future__ import annotations

import html
import json
import sys
from pathlib import Path

from .swarm import TABLE_DIR

__all__ = ["is_swarm_dir", "analyze_swarm", "analyze_swarm_main"]

CPU_BINS = 20


def is_swarm_dir(path: str | None) -> bool:
    return path is not None and (Path(path) / TABLE_DIR).is_dir()


def analyze_swarm(path: str, out_dir: str, *, spark) -> dict:
    from pyspark.sql import functions as F

    df = spark.read.parquet(str(Path(path) / TABLE_DIR)).cache()
    failing = F.size("violation_kinds") > 0
    totals = df.agg(F.count("*").alias("seeds"), F.sum(failing.cast("int")).alias("failing_seeds"),
                    F.sum(F.col("error").isNotNull().cast("int")).alias("errors"),
                    F.sum("cpu_seconds").alias("cpu_seconds"), F.min("cpu_seconds").alias("cpu_min"),
                    F.max("cpu_seconds").alias("cpu_max"),
                    F.percentile_approx("cpu_seconds", 0.5).alias("cpu_p50"),
                    F.percentile_approx("cpu_seconds", 0.99).alias("cpu_p99")).first().asDict()
    kinds = df.select("seed", F.explode("violation_kinds").alias("invariant"))
    rows = {
        "by_invariant": kinds.groupBy("invariant").agg(F.count("*").alias("seeds"), F.min("seed").alias("first_seed"))
        .orderBy(F.desc("seeds"), "invariant"),
        "by_fault_action": df.select("seed", failing.alias("failed"), F.explode("fault_actions").alias("fault_action"))
        .groupBy("fault_action").agg(F.count("*").alias("seeds"), F.sum(F.col("failed").cast("int")).alias("failing_seeds"))
        .withColumn("failing_share", F.round(F.col("failing_seeds") / F.col("seeds"), 3))
        .orderBy(F.desc("failing_share"), "fault_action"),
        "invariant_by_fault_action": df.select("seed", F.explode("fault_actions").alias("fault_action"),
                                               "violation_kinds")
        .select("fault_action", F.explode("violation_kinds").alias("invariant"))
        .groupBy("fault_action", "invariant").agg(F.count("*").alias("seeds")).orderBy(F.desc("seeds"), "fault_action"),
    }
    low, high = totals["cpu_min"] or 0.0, totals["cpu_max"] or 0.0
    width = (high - low) / CPU_BINS or 1.0
    hist = (df.where(F.col("cpu_seconds").isNotNull())
            .select(F.least(F.floor((F.col("cpu_seconds") - low) / width), F.lit(CPU_BINS - 1)).alias("bin"))
            .groupBy("bin").count().orderBy("bin"))
    out = Path(out_dir)
    (out / "aggregates").mkdir(parents=True, exist_ok=True)
    collected = {}
    for name, frame in rows.items():
        frame.write.mode("overwrite").parquet(str(out / "aggregates" / f"{name}.parquet"))
        collected[name] = [r.asDict() for r in frame.collect()]
    collected["cpu_histogram"] = [{"low": round(low + r["bin"] * width, 4), "high": round(low + (r["bin"] + 1) * width, 4),
                                   "seeds": r["count"]} for r in hist.collect()]
    df.unpersist()
    summary = {"kind": "swarm", "table": str(Path(path) / TABLE_DIR), **totals,
               "violations": {r["invariant"]: r["seeds"] for r in collected["by_invariant"]}}
    from . import charts

    figs = {"by_invariant": charts.violations_chart(collected["by_invariant"]),
            "cpu_histogram": charts.cpu_histogram_chart(collected["cpu_histogram"])}
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, default=float) + "\n")
    (out / "report.html").write_text(_html(summary, collected, figs))
    return summary


_SECTIONS = (("by_invariant", "Violations by invariant", "Seeds that broke each invariant, and the first of them."),
             ("by_fault_action", "Seeds by fault action",
              "For each kind of fault a seed's run had (drawn or given), how many seeds had it and how many of "
              "those broke an invariant."),
             ("invariant_by_fault_action", "Violations by fault action and invariant",
              "Failing seeds per (fault action, invariant): a seed counts once under each of its faults."),
             ("cpu_histogram", "CPU time per seed", "Seeds per bin of CPU seconds (the seed's run, in its worker)."))


def _html(summary: dict, rows: dict, figs: dict) -> str:
    from .report import _CSS, _img, _table

    cards = (("seeds", "seeds"), ("failing_seeds", "failing seeds"), ("errors", "seeds that raised"))
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>rocketmq-emulator swarm</title>"
             f"<style>{_CSS}</style></head><body>", "<h1>rocketmq-emulator: a swarm of seeds</h1>",
             f"<p class=meta>table <code>{html.escape(summary['table'])}</code>; CPU "
             f"{summary['cpu_seconds'] or 0:.1f} s in all, per seed p50 {summary['cpu_p50'] or 0:.3f} s, "
             f"p99 {summary['cpu_p99'] or 0:.3f} s.</p>",
             "<div class=cards>" + "".join(f"<div class=card><b>{summary[k] or 0:,}</b><span>{label}</span></div>"
                                           for k, label in cards) + "</div>"]
    for name, title, note in _SECTIONS:
        parts.append(f"<h2 id={name}>{title}</h2><p class=note>{html.escape(note)}</p>")
        if name in figs:
            parts.append(_img(figs[name], title))
        parts.append(_table(rows[name]))
    parts.append("<p class=note>Written by <code>rocketmq-emulator analyze</code>; the tables are also in "
                 "aggregates/*.parquet and summary.json.</p></body></html>")
    return "\n".join(parts)


def analyze_swarm_main(prog: str, args) -> int:
    """``analyze`` given a swarm's --out: Spark where --master/--remote say (no warm server)."""
    from .errors import AnalyticsError, spark_failure_line
    from .preflight import check_master, check_out_dir, check_remote, probe_remote
    from .session import build_remote_session, build_session

    def fail(msg: str, code: int) -> int:
        print(f"{prog}: error: {msg}", file=sys.stderr)
        return code

    try:
        if args.remote is not None and args.master is not None:
            raise AnalyticsError("give --master or --remote, not both")
        check_master(args.master)
        check_out_dir(args.out)
        if args.remote is not None:
            check_remote(args.remote)
            probe_remote(args.remote)
        spark = build_remote_session(args.remote, register_source=False) if args.remote else build_session(args.master)
        summary = analyze_swarm(args.snapshot, args.out, spark=spark)
    except AnalyticsError as exc:
        return fail(str(exc), exc.exit_code)
    except Exception as exc:
        line = spark_failure_line(exc)
        if line is None:
            raise
        return fail(line, 1)
    print(json.dumps({k: summary[k] for k in ("seeds", "failing_seeds", "errors", "violations")}, sort_keys=True))
    return 0
