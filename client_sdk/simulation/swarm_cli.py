"""``simulate --seeds``: a swarm of seeds run as Spark tasks (issue 50), its summary, and
each failure shrunk to a one-line repro.

The engine is found as an entry point (``rocketmq_emulator.swarm_engines``, pyproject.toml)
so that the SDK names no package above it; it needs the analytics extra.

Under ``--out``: ``seeds.parquet/`` (one row per seed: swarm.py says what a row holds),
``failing/seed-<N>/`` (the store of each seed that broke an invariant), ``shrunk-<N>.json``
(with ``--shrink``: the smallest failing scenario found for seed N) and ``summary.json``.
Exit codes: 0 every seed held; 1 a seed broke an invariant (or its run raised); 2 bad
usage; 130 stopped by Ctrl-C (the finished seeds' rows are kept).
"""
from __future__ import annotations

import importlib.util
import json
import shlex
import sys
import time
from pathlib import Path

from rocketmq_emulator.broker.cli.common import fail, install_command

from .scenario import Scenario, ScenarioError
from .swarm import ROW_COLUMNS, SeedRunner, parse_seeds, seed_scenario, shrink, swarm_summary

__all__ = ["swarm_main", "SwarmProgress", "shrink_failures", "ENGINE_GROUP", "analytics_hint"]

ENGINE_GROUP = "rocketmq_emulator.swarm_engines"


def analytics_hint() -> str:
    """The line for a swarm without the analytics extra: the command that installs it from
    where the user is (a checkout or an installed package: install_command)."""
    return f"simulate --seeds runs its seeds as Spark tasks and needs the analytics extra: {install_command('analytics')}"


def hypothesis_hint() -> str:
    return f"--draw-faults draws with hypothesis, which is not installed: {install_command('simulation')}"


SWARM_ONLY = (("draw_faults", "--draw-faults"), ("shrink", "--shrink"), ("master", "--master"),
              ("remote", "--remote"), ("partitions", "--partitions"))


def check_swarm_options(args) -> None:
    """The swarm's options make sense together (before anything runs). ScenarioError."""
    if args.seeds is None:
        given = [option for attr, option in SWARM_ONLY if getattr(args, attr) not in (None, False)]
        if given:
            raise ScenarioError(f"{given[0]} is for swarms: give --seeds too (like --seeds 1..1000)")
        return
    if args.seed is not None:
        raise ScenarioError("give --seed (one run) or --seeds (a swarm), not both")
    if args.master is not None and args.remote is not None:
        raise ScenarioError("give --master or --remote, not both")
    if args.partitions is not None and args.partitions < 1:
        raise ScenarioError(f"--partitions takes a number >= 1, got {args.partitions}")
    try:
        args.seed_list = parse_seeds(args.seeds)
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None


def _engine():
    """The registered swarm engine (Spark's run_swarm), or None when the analytics extra
    (or the registration) is missing."""
    from importlib.metadata import entry_points

    if any(importlib.util.find_spec(name) is None for name in ("pyspark", "pyarrow")):
        return None
    found = next(iter(entry_points(group=ENGINE_GROUP, name="spark")), None)
    return None if found is None else found.load()


class SwarmProgress:
    """A line on stderr at most every ``every`` wall seconds: seeds done of all,
    violations so far, an ETA."""

    def __init__(self, total: int, *, every: float = 2.0, clock=time.monotonic, stream=None) -> None:
        self.total, self.every, self.clock = total, every, clock
        self.stream = stream if stream is not None else sys.stderr
        self.start = self.last = clock()
        self.done = self.failing = 0

    def __call__(self, rows: list[dict]) -> None:
        self.done += len(rows)
        self.failing += sum(1 for r in rows if r["violation_kinds"] or r["error"])
        now = self.clock()
        if now - self.last < self.every and self.done < self.total:
            return
        self.last = now
        rate = self.done / (now - self.start) if now > self.start else 0.0
        eta = f"ETA {(self.total - self.done) / rate:.0f} s" if rate > 0 and self.done < self.total else "done"
        print(f"simulate: {self.done}/{self.total} seeds, {self.failing} with violations, {eta}",
              file=self.stream, flush=True)


def _fail(msg: str, code: int = 2) -> int:
    return fail("simulate", msg, code)


def swarm_main(args, base: Scenario, spark=None) -> int:
    """Run the swarm of ``args.seed_list`` on ``base`` (check_swarm_options ran)."""
    seeds = args.seed_list
    if args.draw_faults and importlib.util.find_spec("hypothesis") is None:
        return _fail(hypothesis_hint())
    engine = _engine()
    if engine is None:
        return _fail(analytics_hint())
    out = Path(args.out)
    runner = SeedRunner(base, draw_faults=args.draw_faults, keep_dir=str(out / "failing"),
                        skip_idle=not args.no_idle_skip)
    try:
        seed_scenario(base, seeds[0], args.draw_faults)     # a scenario no seed can run: one line now
    except ScenarioError as exc:
        return _fail(str(exc))
    progress = None if args.quiet else SwarmProgress(len(seeds))
    started = time.monotonic()
    try:
        run = engine(runner, seeds, out, ROW_COLUMNS, spark=spark, master=args.master, remote=args.remote,
                     partitions=args.partitions, progress=progress)
    except Exception as exc:
        code = getattr(exc, "exit_code", None)       # the engine's errors: one line and their exit code
        if code is None:
            raise
        return _fail(str(exc), code)
    summary = swarm_summary(run.rows, len(seeds), time.monotonic() - started)
    summary.update(interrupted=run.interrupted, partitions=run.partitions, table=run.table, repros=[])
    if args.shrink and not run.interrupted:
        try:
            summary["repros"] = shrink_failures(runner, run.rows, out)
        except KeyboardInterrupt:                    # Ctrl-C while shrinking: the table is whole
            run.interrupted = summary["interrupted"] = True
    (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        _print_summary(summary, out)
    if run.interrupted:
        return 130
    return 1 if summary["failing_seeds"] or summary["errors"] else 0


def shrink_failures(runner: SeedRunner, rows: list[dict], out: Path) -> list[dict]:
    """For each invariant broken, its first failing seed shrunk: the file and the command."""
    repros, done = [], {}
    firsts: dict[str, dict] = {}
    for row in rows:                     # (sorted by seed)
        for kind in row["violation_kinds"]:
            firsts.setdefault(kind, row)
    for kind, row in sorted(firsts.items()):
        seed = row["seed"]
        if seed not in done:
            original = seed_scenario(runner.base, seed, runner.draw_faults)
            small, runs = shrink(original, kind, runner.kinds)
            path = out / f"shrunk-{seed}.json"
            path.write_text(json.dumps(small.to_file_data(), indent=2) + "\n")
            command = shlex.join(["rocketmq-emulator", "simulate", "--seed", str(seed), "--scenario", str(path),
                                  "--out", str(out / f"replay-{seed}")])
            done[seed] = {"seed": seed, "scenario": str(path), "command": command, "shrink_runs": runs,
                          "messages": small.messages,
                          "faults": len(small.faults) + len(small.crashes_ms) + len(small.write_off)
                          + len(small.consumer_restarts) + len(small.broker_write_off) + len(small.broker_down)}
        repros.append({"invariant": kind, **done[seed]})
    return repros


def _print_summary(summary: dict, out: Path) -> None:
    s = summary
    rate = f"{s['seeds_per_second']:.1f} seeds/s" if s["seeds_per_second"] else "-"
    per = f", {s['cpu_seconds_per_seed']:.3f} CPU s per seed" if s["cpu_seconds_per_seed"] is not None else ""
    print(f"swarm: {s['seeds_run']} of {s['seeds_total']} seeds in {s['wall_seconds']:.1f} s ({rate}{per}); "
          f"{s['failing_seeds']} with invariant violations" + (" (stopped by Ctrl-C)" if s["interrupted"] else ""))
    for kind, v in s["violations"].items():
        print(f"  {kind}: {v['seeds']} seed(s), first {', '.join(map(str, v['first_seeds']))}")
    if not s["violations"]:
        print("  every invariant held in every seed")
    if s["errors"]:
        e = s["errors"]
        print(f"  {e['seeds']} seed(s) raised, first {', '.join(map(str, e['first_seeds']))}: {e['first']}")
    for r in s["repros"]:
        print(f"  {r['invariant']}: seed {r['seed']} shrunk to {r['messages']} message(s) and {r['faults']} "
              f"fault(s); replay it: {r['command']}")
    print(f"  table: {s['table']} (one row per seed); failing seeds' stores: {out / 'failing'}")
