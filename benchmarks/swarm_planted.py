"""Planted bugs against a swarm (issue 50, item 6): for each planted bug of the
simulator's own tests (a lost message, an early retry, a commit past an unfinished
message, a double delivery), a swarm of N seeds with drawn faults on Spark, how many
seeds found it, and the first one shrunk (messages and faults of the repro).

    .venv/bin/python benchmarks/swarm_planted.py [--seeds 500] [--master local[2]]

The planted consumers are tests/simulation's; the early retry is that test's patch of
pop_consumer.rocketmq5_retry_interval_ms, applied inside each seed's run (so in Spark's workers).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))  # Spark's workers

from rocketmq_emulator.client_sdk.simulation import pop_consumer  # noqa: E402
from rocketmq_emulator.client_sdk.simulation.swarm import ROW_COLUMNS, SeedRunner, swarm_summary  # noqa: E402
from rocketmq_emulator.client_sdk.simulation.swarm_cli import shrink_failures  # noqa: E402
from tests.simulation.test_swarm_planted import PLANTED, planted_base  # noqa: E402


@contextmanager
def early_retry():
    real = pop_consumer.rocketmq5_retry_interval_ms
    pop_consumer.rocketmq5_retry_interval_ms = lambda attempt: 1000
    try:
        yield
    finally:
        pop_consumer.rocketmq5_retry_interval_ms = real


@dataclass(frozen=True)
class PlantedRunner(SeedRunner):
    """A SeedRunner that plants a patch around each run (in whichever process runs it)."""
    patched: bool = False

    def __call__(self, seed: int) -> dict:
        with early_retry() if self.patched else _nothing():
            return super().__call__(seed)

    def kinds(self, scenario):
        with early_retry() if self.patched else _nothing():
            return super().kinds(scenario)


@contextmanager
def _nothing():
    yield


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=500)
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args()
    from rocketmq_emulator.spark_analytics.session import build_session
    from rocketmq_emulator.spark_analytics.swarm import run_swarm

    spark = build_session(args.master, app_name="swarm-planted")
    seeds = list(range(1, args.seeds + 1))
    print(f"{args.seeds} seeds a bug, drawn faults, {args.master}\n")
    print("| planted bug | invariant | seeds that found it | first | shrunk: messages | faults | shrink runs | "
          "swarm wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for bug, (invariant, plant, protocol) in PLANTED.items():
        with tempfile.TemporaryDirectory(prefix="swarm-planted-") as out:
            runner = PlantedRunner(planted_base(protocol), draw_faults=True, keep_dir=out + "/failing",
                                   consumer_class=plant if isinstance(plant, type) else None,
                                   patched=not isinstance(plant, type))
            t = time.monotonic()
            run = run_swarm(runner, seeds, out, ROW_COLUMNS, spark=spark)
            wall = time.monotonic() - t
            found = swarm_summary(run.rows, len(seeds), wall)["violations"].get(invariant, {"seeds": 0})
            repro = next((r for r in shrink_failures(runner, run.rows, Path(out)) if r["invariant"] == invariant),
                         None)
        if repro is None:
            print(f"| {bug} | {invariant} | 0 / {len(seeds)} | - | - | - | - | {wall:.0f} |")
            continue
        print(f"| {bug} | {invariant} | {found['seeds']} / {len(seeds)} | {repro['seed']} | {repro['messages']} | "
              f"{repro['faults']} | {repro['shrink_runs']} | {wall:.0f} |", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
