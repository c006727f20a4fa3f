"""Swarms of seeds (issue 50): one scenario run from many seeds, each seed's run a row.

This module is the swarm's pure part, with no engine in it: ``SeedRunner`` runs one
seed in process and returns its row (an engine, Spark for ``simulate --seeds``, only
hands seeds to it and collects rows); ``draw_schedule`` draws a seed's faults with the
hypothesis strategies of strategies.py as a seeded generator; ``shrink`` makes a failing
case small. ``run_locally`` is the plain loop over seeds in one process (the planted-bug
tests and the benchmarks' baseline).

A row holds, for its seed, every field ``simulate --json`` prints (same names, same
values; ``store`` is where the failing seed's store was kept, None for a seed that held:
its store is deleted), and ``scenario_hash`` (of the scenario without its seed and drawn
faults: rows of one swarm share it), ``violation_kinds`` and ``first_violation_step``,
``cpu_seconds``, ``schedule`` (the drawn faults, in the scenario file's form; None when
none were drawn), ``fault_actions`` (what faults the seed's run had: "crash",
"write-off", "consumer-restart", "send:drop"...) and ``error`` (a seed whose run raised:
a defect, named, instead of a swarm that stops).

Determinism: a row depends on the scenario and its seed only (wall_seconds, cpu_seconds
and store aside), never on which process, worker or partition ran it.
"""
from __future__ import annotations

import json
import logging
import os
import random
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable

from .scenario import Scenario, ScenarioError

__all__ = ["SeedRunner", "ROW_COLUMNS", "parse_seeds", "draw_schedule", "seed_scenario", "scenario_hash", "shrink",
           "run_locally", "swarm_summary", "quiet_run_logs", "MAX_SEEDS"]

MAX_SEEDS = 10_000_000          # a swarm's seeds are listed on the driver: bounded
MAX_SEED = 2 ** 63 - 1          # a Parquet int64
DRAW_ATTEMPTS = 20              # drawn schedules a scenario may refuse (e.g. a send drop in a transactional run)

# The row's columns and their kinds ("json": a nested value, text in the Parquet table).
ROW_COLUMNS = {
    "seed": "int", "produced": "int", "succeeded": "int", "dead_lettered": "int", "send_backs": "int",
    "invariant_violations": "int", "messages": "int", "accepted": "int", "refused_sends": "int",
    "deliveries": "int", "crashes": "int", "settled": "bool", "virtual_seconds": "float", "wall_seconds": "float",
    "idle_runs_carried": "int", "store": "str", "groups": "json", "violations": "json", "transactions": "json",
    "faults": "json", "scenario_hash": "str", "violation_kinds": "strs", "first_violation_step": "int",
    "cpu_seconds": "float", "schedule": "json", "fault_actions": "strs", "error": "str",
}


def parse_seeds(text: str) -> list[int]:
    """``--seeds``: N (seeds 1..N), A..B (inclusive) or a comma-separated list of seeds
    and ranges (3,7,100..120). Sorted, each once. ValueError: one readable line."""
    text = text.strip()
    if text.isdigit():
        count = int(text)
        if not 1 <= count <= MAX_SEEDS:
            raise ValueError(f"--seeds N takes 1 to {MAX_SEEDS:,} seeds, got {text}")
        return list(range(1, count + 1))
    seeds: set[int] = set()
    for item in (part.strip() for part in text.split(",")):
        low, dots, high = item.partition("..")
        if not low.isdigit() or (dots and not high.isdigit()):
            raise ValueError(f"--seeds takes N, A..B or a list like 3,7,100..120 (seeds are whole numbers >= 0), "
                             f"got {text!r}")
        a, b = int(low), int(high) if dots else int(low)
        if b < a or b > MAX_SEED:
            raise ValueError(f"--seeds {item!r}: a range A..B needs A <= B <= {MAX_SEED}")
        if len(seeds) + (b - a + 1) > MAX_SEEDS:
            raise ValueError(f"--seeds {text!r} is more than {MAX_SEEDS:,} seeds")
        seeds.update(range(a, b + 1))
    return sorted(seeds)


def scenario_hash(scenario: Scenario) -> str:
    """Names the scenario a swarm runs: its file form without the seed (16 hex digits)."""
    import hashlib          # (here: only a swarm needs it, and a single run's start should not pay for it)
    data = replace(scenario, seed=0).to_file_data()
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def draw_schedule(base: Scenario, seed: int, attempt: int = 0) -> dict:
    """A seed's crashes, write-off windows, consumer restarts and fault rules, drawn by
    the strategies of strategies.py (their bounds, one definition) from bytes of
    ``random.Random`` seeded by (seed, attempt): hypothesis' byte-stream provider turns
    the bytes into draws, the same in every process (its default provider mixes in
    constants of whatever modules are loaded). Returns Scenario keyword arguments."""
    from hypothesis.internal.conjecture.data import ConjectureData
    from hypothesis.internal.conjecture.providers import BytestringProvider

    from .strategies import fault_rules, fault_timelines

    stream = random.Random(seed * DRAW_ATTEMPTS + attempt).randbytes(8192)
    data = ConjectureData(random=None, provider=BytestringProvider, provider_kw={"bytestring": stream})
    timeline = data.draw(fault_timelines(base.duration_ms, tuple(g.name for g in base.groups)))
    rules = data.draw(fault_rules(base.duration_ms, tuple(g.name for g in base.groups if g.protocol == "4.x"),
                                  five_groups=tuple(g.name for g in base.groups if g.protocol == "5.x")))
    return {**timeline, "faults": rules}


def seed_scenario(base: Scenario, seed: int, draw_faults: bool) -> Scenario:
    """The scenario seed ``seed`` runs: ``base`` with its seed, and its drawn faults."""
    if not draw_faults:
        return replace(base, seed=seed)
    for attempt in range(DRAW_ATTEMPTS):
        try:
            return replace(base, seed=seed, **draw_schedule(base, seed, attempt))
        except ScenarioError:            # a draw this scenario cannot take: the next one, deterministically
            continue
    raise ScenarioError(f"--draw-faults: none of {DRAW_ATTEMPTS} schedules drawn for seed {seed} fits this "
                        f"scenario (drawn faults are for 4.x and 5.x groups on one broker)")


_SCHEDULE_KEYS = ("crashes", "write_off", "consumer_restarts", "faults")


def _schedule(scenario: Scenario) -> dict:
    data = scenario.to_file_data()
    return {key: data.get(key, []) for key in _SCHEDULE_KEYS}


def _fault_actions(s: Scenario) -> list[str]:
    actions = [name for name, present in (("crash", s.crashes_ms), ("write-off", s.write_off or s.broker_write_off),
                                          ("consumer-restart", s.consumer_restarts), ("broker-down", s.broker_down))
               if present]
    return sorted(set(actions) | {f"{f.operation}:{f.action}" for f in s.faults})


@contextmanager
def quiet_run_logs():
    """A run provokes refusals, failed send-backs and crash recoveries on purpose; the
    clients' and store's warnings about them would bury what is printed. Put back after."""
    loggers = [logging.getLogger(name) for name in ("client_sdk", "broker", "store")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _scratch_root() -> str:
    """Where a seed's store lives while it runs: memory (/dev/shm) where there is some."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else tempfile.gettempdir()


@dataclass(frozen=True)
class SeedRunner:
    """Runs one seed of ``base`` in process and returns its row (a plain picklable
    object: an engine ships it to its workers). ``keep_dir``: where a failing seed's
    store is kept (``seed-<N>``); ``consumer_class``: a test's planted bug."""
    base: Scenario
    draw_faults: bool = False
    keep_dir: str | None = None
    skip_idle: bool = True
    consumer_class: type | None = None

    def __call__(self, seed: int) -> dict:
        row = dict.fromkeys(ROW_COLUMNS)
        row.update(seed=seed, scenario_hash=scenario_hash(self.base), violation_kinds=[], fault_actions=[])
        cpu = time.process_time()
        try:
            scenario = seed_scenario(self.base, seed, self.draw_faults)
            row.update(schedule=_schedule(scenario) if self.draw_faults else None,
                       fault_actions=_fault_actions(scenario))
            result, kept = self._run(scenario, keep=self.keep_dir is not None)
        except Exception as exc:              # a defect (or an undrawable seed): named in its row
            row.update(error=f"{type(exc).__name__}: {exc}".splitlines()[0][:500],
                       cpu_seconds=round(time.process_time() - cpu, 4))
            return row
        row.update(result.summary())
        row.update(store=kept, cpu_seconds=round(time.process_time() - cpu, 4),
                   violation_kinds=sorted({v.invariant for v in result.violations}),
                   first_violation_step=min((v.step for v in result.violations), default=None))
        return row

    def kinds(self, scenario: Scenario) -> set[str]:
        """The invariants ``scenario`` breaks (its store not kept): what ``shrink`` asks."""
        result, _ = self._run(scenario, keep=False)
        return {v.invariant for v in result.violations}

    def _run(self, scenario: Scenario, keep: bool):
        from .simulator import Simulation

        scratch = Path(tempfile.mkdtemp(prefix=f"swarm-seed-{scenario.seed}-", dir=_scratch_root()))
        kept = None
        try:
            kwargs = {"consumer_class": self.consumer_class} if self.consumer_class is not None else {}
            with quiet_run_logs():
                result = Simulation(scenario, scratch / "store", skip_idle=self.skip_idle, **kwargs).run()
            if keep and not result.ok:
                target = Path(self.keep_dir) / f"seed-{scenario.seed}"
                shutil.rmtree(target, ignore_errors=True)          # a retried task's earlier copy
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(scratch / "store"), target)
                kept = str(target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        return result, kept


def run_locally(runner: Callable[[int], dict], seeds: Iterable[int],
                progress: Callable[[list[dict]], None] | None = None) -> list[dict]:
    """The plain loop: every seed in this process, one after another."""
    rows = []
    for seed in seeds:
        rows.append(runner(seed))
        if progress is not None:
            progress(rows[-1:])
    return rows


# -- shrinking ------------------------------------------------------------------------------
def shrink(scenario: Scenario, invariant: str, kinds: Callable[[Scenario], set[str]], *,
           budget: int = 150) -> tuple[Scenario, int]:
    """A smaller scenario that still breaks ``invariant`` with the same seed: greedy delta
    debugging, each step the first smaller candidate that still breaks it — fewer
    messages (smallest counts first), one fault fewer (a rule, a crash, a window, a
    restart), a window half as long — until no candidate does or ``budget`` runs were
    spent. Returns (the smallest found, runs spent)."""
    runs = 0
    current = scenario
    progressed = True
    while progressed and runs < budget:
        progressed = False
        for candidate in _smaller(current):
            if runs >= budget:
                break
            runs += 1
            try:
                broke = invariant in kinds(candidate)
            except Exception:                # a candidate whose run raises is not the same failure
                broke = False
            if broke:
                current, progressed = candidate, True
                break
    return current, runs


def _smaller(s: Scenario):
    """Valid scenarios one step smaller than ``s``, the biggest cuts first."""
    m = s.messages
    for count in sorted({1, 2, 3, 5, 8, 10, m // 4, m // 2, m * 3 // 4, m - 1}):
        if 1 <= count < m:
            yield from _valid(s, messages=count)
    for key in ("faults", "crashes_ms", "write_off", "consumer_restarts", "broker_write_off", "broker_down"):
        items = getattr(s, key)
        for i in range(len(items)):
            yield from _valid(s, **{key: items[:i] + items[i + 1:]})
    for i, f in enumerate(s.faults):
        if f.window_ms is not None and f.window_ms[1] - f.window_ms[0] > 1:
            start, end = f.window_ms
            shorter = replace(f, window_ms=(start, start + (end - start) // 2))
            yield from _valid(s, faults=s.faults[:i] + (shorter,) + s.faults[i + 1:])
    for i, w in enumerate(s.write_off):
        if w.end_ms - w.start_ms > 1:
            yield from _valid(s, write_off=s.write_off[:i] + (replace(w, end_ms=w.start_ms + (w.end_ms - w.start_ms) // 2),)
                              + s.write_off[i + 1:])
    for i, r in enumerate(s.consumer_restarts):
        if r.down_ms > 1:
            yield from _valid(s, consumer_restarts=s.consumer_restarts[:i] + (replace(r, down_ms=r.down_ms // 2),)
                              + s.consumer_restarts[i + 1:])


def _valid(s: Scenario, **changes):
    try:
        yield replace(s, **changes)
    except ScenarioError:
        pass


# -- the summary ----------------------------------------------------------------------------
def swarm_summary(rows: list[dict], total: int, wall_s: float, first: int = 5) -> dict:
    """Seeds run, seeds/s, CPU, and violations by kind with the first failing seeds."""
    by_kind: dict[str, list[int]] = {}
    for row in sorted(rows, key=lambda r: r["seed"]):
        for kind in row["violation_kinds"] or ():
            by_kind.setdefault(kind, []).append(row["seed"])
    errors = sorted(r["seed"] for r in rows if r["error"])
    cpu = sum(r["cpu_seconds"] or 0 for r in rows)
    return {
        "seeds_run": len(rows), "seeds_total": total, "wall_seconds": round(wall_s, 3),
        "seeds_per_second": round(len(rows) / wall_s, 3) if wall_s > 0 else None,
        "cpu_seconds": round(cpu, 3), "cpu_seconds_per_seed": round(cpu / len(rows), 4) if rows else None,
        "failing_seeds": sum(1 for r in rows if r["violation_kinds"]),
        "violations": {kind: {"seeds": len(seeds), "first_seeds": seeds[:first]}
                       for kind, seeds in sorted(by_kind.items())},
        "errors": {"seeds": len(errors), "first_seeds": errors[:first], "first": next(
            (r["error"] for r in sorted(rows, key=lambda r: r["seed"]) if r["error"]), None)} if errors else None,
    }
