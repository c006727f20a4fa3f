"""A simulated crash is a real process death, and the ``durable`` invariant proves from
seeds that it loses nothing acknowledged (issue 17, items 1 and 2)."""
from __future__ import annotations

import os

import pytest

from rocketmq_emulator.client_sdk.simulation import GroupSpec, ProducerSpec, Simulation, run_simulation
from rocketmq_emulator.store import MessageStore

from .conftest import W1, small

# Crashes between the broker's flushes (every 5 s of virtual time): each one comes while
# the messages of the last seconds were acknowledged but not flushed.
UNFLUSHED_CRASHES = (1_700, 7_300, 12_900, 61_100)


def _fast_producer():
    return (ProducerSpec(topic="SimTopic", rate=200.0),)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_crashes_between_flushes_lose_no_acknowledged_message(store_dir, seed):
    scenario = small(seed=seed, messages=600, producers=_fast_producer(), crashes_ms=UNFLUSHED_CRASHES,
                     groups=(GroupSpec(batch_size=4, fail_probability=0.1, **W1),))
    sim = Simulation(scenario, store_dir)
    checked = []
    real = sim.checker.recovered
    sim.checker.recovered = lambda store, now: (checked.append(len(sim.checker.uniq)), real(store, now))
    result = sim.run()
    assert result.ok, [str(v) for v in result.violations[:5]]
    assert result.settled and result.crashes == len(UNFLUSHED_CRASHES)
    assert checked and checked[0] > 300         # the first crash already had hundreds of messages to find


def test_a_crash_that_loses_the_unflushed_tail_is_caught(store_dir, monkeypatch):
    """Planted bug: a crash that keeps only what the last flush had synced — what the
    store did before puts were written through."""
    real = MessageStore.crash

    def lossy_crash(self):
        kept = [(seg.path, seg.synced) for seg in self._log.segments if hasattr(seg, "synced")]
        real(self)
        for path, length in kept:
            os.truncate(path, length)

    monkeypatch.setattr(MessageStore, "crash", lossy_crash)
    scenario = small(messages=400, producers=_fast_producer(), crashes_ms=(1_700,))
    result = run_simulation(scenario, store_dir)
    durable = [v for v in result.violations if v.invariant == "durable"]
    assert durable, [str(v) for v in result.violations[:5]]
    assert "after the restart that offset" in durable[0].message
