"""The README's swarm guide, its Python part: the per-seed function in a plain loop."""
from __future__ import annotations

from tests.support.readme import assert_readme_shows

# --- README example: begin ---
from rocketmq_emulator.client_sdk.simulation import GroupSpec, Scenario
from rocketmq_emulator.client_sdk.simulation.swarm import SeedRunner, run_locally


def swarm_in_one_process(seeds):
    """One row per seed, each with its drawn faults: what a Spark task returns."""
    runner = SeedRunner(Scenario(messages=20, duration_ms=300_000, groups=(GroupSpec(poison_every=10),)),
                        draw_faults=True)
    return run_locally(runner, seeds)
# --- README example: end ---


def test_the_readme_shows_this_example():
    assert_readme_shows(__file__)


def test_the_loop_gives_a_row_per_seed_with_its_drawn_faults():
    rows = swarm_in_one_process(range(1, 6))
    assert [r["seed"] for r in rows] == [1, 2, 3, 4, 5] and all(r["error"] is None for r in rows)
    assert all(r["schedule"] is not None and r["produced"] == 20 for r in rows)
    assert rows == [{**r, "wall_seconds": rows[i]["wall_seconds"], "cpu_seconds": rows[i]["cpu_seconds"]}
                    for i, r in enumerate(swarm_in_one_process(range(1, 6)))]
