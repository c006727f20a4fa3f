"""``rocketmq-emulator snapshot`` and ``rocketmq-emulator analyze`` (broker/cli.py dispatches here).

Errors the user can fix come out as one line on stderr and exit code 2; pyspark is
imported only by ``analyze``, so ``snapshot`` works without the analytics extra.
"""
from __future__ import annotations

import argparse
import json
import sys

from .errors import AnalyticsError

__all__ = ["snapshot_main", "analyze_main"]


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line (no usage block) and exit 2."""

    def error(self, message: str):
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise SystemExit(2)


def _fail(prog: str, msg: str) -> int:
    print(f"{prog}: {msg}", file=sys.stderr)
    return 2


def snapshot_main(argv: list[str]) -> int:
    p = _Parser(prog="rocketmq-emulator snapshot",
                description="Take a consistent, read-only snapshot of a store (live or stopped).")
    p.add_argument("--data-dir", required=True, help="the store directory (storePathRootDir)")
    p.add_argument("--out", required=True, help="the snapshot directory to create")
    p.add_argument("--json", action="store_true", help="print the manifest as JSON")
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    from .snapshot import take_snapshot

    try:
        m = take_snapshot(args.data_dir, args.out)
    except AnalyticsError as exc:
        return _fail(p.prog, str(exc))
    if args.json:
        print(json.dumps(m.to_dict(), indent=2))
        return 0
    cl = m.commitlog
    print(f"snapshot {args.out}: commit log {cl['min_offset']}..{cl['max_offset']}, {cl['records']} records "
          f"in {len(cl['segments'])} segment(s), {sum(len(q) for q in m.consume_queues.values())} consume "
          f"queue(s), {len(m.config_files)} config file(s); took {m.took_ms} ms")
    if m.damage:
        d = m.damage
        print(f"warning: the commit log is damaged: {d['kind']} record at offset {d['offset']} ({d['detail']}); "
              f"the snapshot stops before it", file=sys.stderr)
    return 0


def analyze_main(argv: list[str]) -> int:
    p = _Parser(prog="rocketmq-emulator analyze",
                description="Spark analysis of a snapshot: report.html, summary.json, aggregates/*.parquet.")
    p.add_argument("snapshot", help="a snapshot directory (or a store directory)")
    p.add_argument("--out", required=True, help="the report directory")
    p.add_argument("--master", default=None, help="Spark master URL (default local[*])")
    p.add_argument("--delay-levels", default=None,
                   help='messageDelayLevel of the broker, e.g. "1s 5s 10s ..." (default: RocketMQ\'s, '
                        "corrected by what the snapshot's schedule queues show)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        from .layout import resolve_store

        resolve_store(args.snapshot, "snapshot")           # a clear error before Spark starts
        if args.delay_levels:
            from .jobs import parse_delay_levels
            parse_delay_levels(args.delay_levels)
    except ImportError as exc:
        return _fail(p.prog, f"needs the analytics extra (pip install 'rocketmq-emulator[analytics]'): {exc}")
    except (AnalyticsError, ValueError) as exc:
        return _fail(p.prog, str(exc))
    from .report import Progress, analyze_snapshot

    try:
        summary = analyze_snapshot(args.snapshot, args.out, master=args.master, delay_levels=args.delay_levels,
                                   progress=Progress(enabled=not args.quiet))
    except AnalyticsError as exc:
        return _fail(p.prog, str(exc))
    print(json.dumps({k: summary[k] for k in ("produced", "succeeded", "dead_lettered", "send_backs")}))
    return 0
