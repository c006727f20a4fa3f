"""How many Spark jobs, stages and tasks `analyze` runs for one snapshot, counted with
Spark's status tracker, in this process (the JVM this process starts, as `analyze`
starts it).

    .venv/bin/python benchmarks/analyze_stages.py SNAPSHOT [--master local[*]] [--driver-read-max 64M]

It calls report.analyze_snapshot (whose signature the reference commits share, so
another checkout's venv can run this file on its own code) and then lists every job
the application ran: its stages, and of those the ones that ran tasks (a stage whose
shuffle output another job already wrote is listed by the job but skipped).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("snapshot")
    ap.add_argument("--master", default=None)
    ap.add_argument("--driver-read-max", type=int, default=None, help="bytes (default: analyze's)")
    ap.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    args = ap.parse_args(argv)
    from pyspark import SparkContext

    from rocketmq_emulator.spark_analytics.report import analyze_snapshot

    with tempfile.TemporaryDirectory(prefix="rmq-stages-") as out:
        t = time.perf_counter()
        kwargs = {} if args.driver_read_max is None else {"driver_read_max": args.driver_read_max}
        summary = analyze_snapshot(args.snapshot, out, master=args.master, progress=lambda msg: None, **kwargs)
        wall = time.perf_counter() - t
    tracker = SparkContext._active_spark_context.statusTracker()
    jobs = []
    for job_id in sorted(tracker.getJobIdsForGroup(None)):
        info = tracker.getJobInfo(job_id)
        stages = [tracker.getStageInfo(s) for s in info.stageIds]
        ran = [s for s in stages if s is not None and s.numCompletedTasks > 0]
        jobs.append({"job": job_id, "stages": len(info.stageIds), "stages_run": len(ran),
                     "tasks": sum(s.numCompletedTasks for s in ran)})
    result = {"records": summary["records"], "jobs": len(jobs), "stages": sum(j["stages"] for j in jobs),
              "stages_run": sum(j["stages_run"] for j in jobs), "tasks": sum(j["tasks"] for j in jobs),
              "wall_s": round(wall, 1), "per_job": jobs}
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['records']:,} records: {result['jobs']} jobs, {result['stages']} stages "
              f"({result['stages_run']} ran tasks), {result['tasks']} tasks; analyze_snapshot {wall:.1f} s (Spark's start included)")
        for j in jobs:
            print(f"  job {j['job']}: {j['stages']} stages, {j['stages_run']} ran, {j['tasks']} tasks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
