"""``rocketmq-emulator snapshot`` and ``rocketmq-emulator analyze`` (broker/cli/main.py dispatches here).

Importing this module imports nothing heavy. ``snapshot`` uses the standard library
only, so it works on the base install; ``analyze`` first checks that the analytics
extra is installed. Exit codes: 0 done; 2 bad usage or input (one line on stderr,
``rocketmq-emulator <command>: error: ...``), checked before Spark starts where it can
be; 1 a failure while running (Spark did not start or its master did not take the job).
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import re
import sys
import time

from rocketmq_emulator.store.errors import SnapshotError

from .errors import AnalyticsError, spark_failure_line

__all__ = ["snapshot_main", "analyze_main"]


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line (no usage block) and exit 2."""

    def error(self, message: str):
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _fail(prog: str, msg: str, code: int = 2) -> int:
    print(f"{prog}: error: {msg}", file=sys.stderr)
    return code


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _size(text: str) -> int:
    """'64M' -> bytes (argparse type: a ValueError becomes a one-line usage error)."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1:] if t[-1:] in "KMG" and t[-1:] else ""
    number = t[:-1] if unit else t
    if not number.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (bytes, or a number with K, M or G)")
    return int(number) * _SIZE_UNITS[unit]


def snapshot_main(argv: list[str]) -> int:
    p = _Parser(prog="rocketmq-emulator snapshot",
                description="Take a consistent, read-only snapshot of a store (live or stopped); of a cluster's "
                            "store (serve --brokers N, simulate --brokers N), every broker's.")
    p.add_argument("--data-dir", required=True, help="the store directory (storePathRootDir)")
    p.add_argument("--out", required=True, help="the snapshot directory to create (must not exist, or be empty)")
    p.add_argument("--broker", default=None, metavar="NAME",
                   help="of a cluster's store, only this broker's (default: every broker's)")
    p.add_argument("--json", action="store_true", help="print the manifest as JSON (of a cluster: one per broker)")
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    from rocketmq_emulator.store.snapshot import take_snapshot

    from rocketmq_emulator.store.store_dir import cluster_members

    members = cluster_members(args.data_dir)
    if args.broker is not None:
        chosen = [(n, w) for n, w in members if n == args.broker]
        if not chosen:
            return _fail(p.prog, f"no broker named {args.broker!r} in {args.data_dir}; its brokers are "
                                 f"{', '.join(n for n, _ in members)}")
        members = chosen
    out = Path(args.out)
    manifests = {}
    try:
        for i, (name, where) in enumerate(members):
            # the first (broker-a, or the one asked for) at --out, the others beside it as in the store
            target = out if i == 0 else out / "brokers" / name
            manifests[name] = take_snapshot(where, target, wall_ms=lambda: int(time.time() * 1000))
    except (AnalyticsError, SnapshotError) as exc:
        return _fail(p.prog, str(exc), exc.exit_code)
    if args.json:
        docs = {name: m.to_dict() for name, m in manifests.items()}
        print(json.dumps(docs[members[0][0]] if len(docs) == 1 else docs, indent=2))
        return 0
    for name, m in manifests.items():
        cl = m.commitlog
        whose = f" ({name})" if len(manifests) > 1 else ""
        print(f"snapshot {args.out}{whose}: commit log {cl['min_offset']}..{cl['max_offset']}, {cl['records']} "
              f"records in {len(cl['segments'])} segment(s), {sum(len(q) for q in m.consume_queues.values())} "
              f"consume queue(s), {len(m.config_files)} config file(s); took {m.took_ms} ms")
        if m.damage:
            d = m.damage
            print(f"warning: the commit log{whose} is damaged: {d['kind']} record at offset {d['offset']} "
                  f"({d['detail']}); the snapshot stops before it", file=sys.stderr)
    if len(manifests) > 1:
        print("note: each broker's snapshot is consistent on its own; of a live cluster they are not one cut "
              "across brokers")
    return 0


def analyze_main(argv: list[str]) -> int:
    from .preflight import missing_analytics_module

    p = _analyze_parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.stop_spark:
        return _stop_spark(p, args)
    missing = [name for name, value in (("snapshot", args.snapshot), ("--out", args.out)) if value is None]
    if missing:
        return _fail(p.prog, f"the following arguments are required: {', '.join(missing)}")
    missing_module = missing_analytics_module()
    if missing_module is not None:
        # the command line (broker/cli/main.py) says which extra and how to install it
        raise ImportError(f"No module named {missing_module!r}", name=missing_module)
    from .swarm_report import analyze_swarm_main, is_swarm_dir

    if is_swarm_dir(args.snapshot):             # a swarm's --out (simulate --seeds): its table's report
        return analyze_swarm_main(p.prog, args)
    return _analyze(p, args)


def _analyze_parser() -> _Parser:
    p = _Parser(prog="rocketmq-emulator analyze",
                description="Spark analysis of a snapshot: report.html, summary.json, aggregates/*.parquet. "
                            "Needs the analytics extra and Java 17+.")
    p.add_argument("snapshot", nargs="?", help="a snapshot directory (or a store directory, or a swarm's --out "
                                               "from simulate --seeds)")
    p.add_argument("--out", help="the report directory (created if missing)")
    p.add_argument("--master", default=None,
                   help="Spark master URL: local[N], local[*], spark://HOST:PORT, yarn, k8s://... (default local[*])")
    p.add_argument("--remote", default=None, metavar="sc://HOST:PORT",
                   help="run on a Spark Connect server instead (paths are read where the server runs)")
    p.add_argument("--delay-levels", default=None,
                   help='messageDelayLevel of the broker, e.g. "1s 5s 10s ..." (default: RocketMQ\'s, '
                        "corrected by what the snapshot's schedule queues show)")
    p.add_argument("--driver-read-max", type=_size, default=None, metavar="SIZE",
                   help="decode a commit log up to SIZE (bytes, or with K, M, G) in the driver and hand it to Spark; "
                        "a larger one is decoded by the executors, a task per segment (default 64M; 0: always the "
                        "executors)")
    p.add_argument("--no-spark-server", dest="spark_server", action="store_false", default=None,
                   help="start Spark in this process for this analysis only, instead of using (or starting) the "
                        "warm Spark server that later analyses share (default off when $CI is set, or with "
                        f"{SERVER_ENV}=off)")
    p.add_argument("--spark-idle-timeout", type=_seconds, default=None, metavar="DURATION",
                   help="a Spark server this run starts stops after this long unused (default 15m)")
    p.add_argument("--stop-spark", action="store_true",
                   help="stop the warm Spark server (of this user and Python environment) and exit")
    p.add_argument("--quiet", action="store_true", help="no progress lines (errors still go to stderr)")
    return p


def _analyze(p: _Parser, args) -> int:
    from .progress import Progress

    progress = Progress(enabled=not args.quiet)
    warm = _use_spark_server(args)
    if warm:
        # The server's supervisor checks and runs it: this process imports none of Spark's,
        # Arrow's or matplotlib's modules (a second of a warm analysis' few)
        from .spark_server import analyze_on_server

        try:
            summary = analyze_on_server(args.snapshot, args.out, delay_levels=args.delay_levels,
                                        driver_read_max=args.driver_read_max, progress=progress)
        except (AnalyticsError, SnapshotError) as exc:
            return _fail(p.prog, str(exc), exc.exit_code)
        if summary is not None:
            return _print_counts(summary)
    # (an ImportError here, an extra installed but broken, is said by the command line)
    from .checks import check_inputs
    from .report import analyze_snapshot
    try:
        check_inputs(args.snapshot, args.out, master=args.master, remote=args.remote,
                     delay_levels=args.delay_levels)
    except ValueError as exc:
        return _fail(p.prog, str(exc))
    except (AnalyticsError, SnapshotError) as exc:
        return _fail(p.prog, str(exc), exc.exit_code)
    try:
        summary = analyze_snapshot(args.snapshot, args.out, master=args.master, delay_levels=args.delay_levels,
                                   progress=progress, driver_read_max=args.driver_read_max, remote=args.remote)
        if warm:                                 # (none runs) a server for the next analysis
            _start_spark_server(p, args)
    except (AnalyticsError, SnapshotError) as exc:
        return _fail(p.prog, str(exc), exc.exit_code)
    except Exception as exc:
        line = spark_failure_line(exc)
        if line is None:                         # not Spark's: a defect of ours, with its traceback
            raise
        return _fail(p.prog, line, 1)
    return _print_counts(summary)


def _start_spark_server(p: _Parser, args) -> None:
    """Start the warm server in the background, warming up with this snapshot, and say
    so in one line."""
    from .spark_server import DEFAULT_IDLE_TIMEOUT_S, start_in_background

    started = start_in_background(args.spark_idle_timeout or DEFAULT_IDLE_TIMEOUT_S,
                                  warm_up=str(Path(args.snapshot).resolve()))
    if started is not None and not args.quiet:
        _say(p.prog)(
            f"started a Spark server for later analyses (127.0.0.1:{started.port}, pid {started.supervisor_pid}; it "
            f"stops after {_minutes(started.idle_timeout_s)} unused; to stop it now: rocketmq-emulator analyze "
            "--stop-spark)")


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min" if seconds >= 60 and seconds % 60 == 0 else f"{seconds:g} s"


def _print_counts(summary: dict) -> int:
    print(json.dumps({k: summary[k] for k in ("produced", "succeeded", "dead_lettered", "send_backs")}))
    return 0


# Whether analyze uses the warm Spark server by default: on, except where $CI is set (a CI
# job's machine goes away with it: a server would save nothing and outlive the job) or
# where this says off.
SERVER_ENV = "ROCKETMQ_EMULATOR_SPARK_SERVER"


def _use_spark_server(args) -> bool:
    if args.master is not None or args.remote is not None:
        return False                           # Spark where the user said
    if os.name != "posix":
        return False                           # (its locks are POSIX file locks)
    if args.spark_server is not None:
        return args.spark_server
    choice = os.environ.get(SERVER_ENV, "").strip().lower()
    if choice in ("on", "1", "true", "yes"):
        return True
    if choice in ("off", "0", "false", "no"):
        return False
    return os.environ.get("CI", "").strip().lower() in ("", "0", "false", "no")


def _say(prog: str):
    def say(line: str) -> None:
        print(f"{prog}: {line}", file=sys.stderr, flush=True)
    return say


def _stop_spark(p, args) -> int:
    if args.snapshot is not None or args.out is not None:
        return _fail(p.prog, "--stop-spark takes no snapshot and no --out")
    from .spark_server import stop_server

    try:
        stopped = stop_server()
    except OSError as exc:
        return _fail(p.prog, f"cannot stop the Spark server: {exc}", 1)
    if stopped is None:
        print("no Spark server was running")
    else:
        print(f"stopped the Spark server (127.0.0.1:{stopped.port}, pid {stopped.supervisor_pid})")
    return 0


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(s|m|h)?")


def _seconds(text: str) -> float:
    """'15m' -> 900.0 (argparse type: seconds, or a number with s, m or h)."""
    m = _DURATION.fullmatch(text.strip().lower())
    if m is None or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 90s, 15m, 1h)")
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2) or "s"]
