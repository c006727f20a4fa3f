"""Model-based test: broker + SDK driven by hypothesis rules (sends, clock jumps,
crashes, the write permission), compared with a small reference model of where each
message must end. Message n is poison when n % 3 == 0, fails once when n % 3 == 1, and
is fine otherwise."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rocketmq_emulator.client_sdk.simulation import GroupSpec, Scenario, Simulation
from rocketmq_emulator.client_sdk.simulation.strategies import scenarios

POISON, FAIL_ONCE, FINE = 0, 1, 2
GROUP = GroupSpec(poison_every=3, fail_once_every=3, fail_once_remainder=1, max_reconsume_times=2)


class BrokerAndClients(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="sim-sm-"))
        self.sim = Simulation(Scenario(messages=0, groups=(GROUP,)), self.dir / "store")
        self.sim.start()
        self.accepted: list[int] = []          # the model: message numbers the broker took
        self.writeable = True
        self.crashed = False

    @rule()
    def send(self):
        n = self.sim.next_number
        took = self.sim.send_now()
        assert took == self.writeable          # refused exactly while writes are off
        if took:
            self.accepted.append(n)

    @rule(seconds=st.sampled_from([1, 5, 10, 30, 60, 600, 3600]))
    def jump_the_clock(self, seconds):
        self.sim.advance(seconds * 1000)

    @precondition(lambda self: self.sim.next_number > 0)
    @rule()
    def crash_and_restart(self):
        self.sim.crash()
        self.crashed = True
        self.sim.embedded.set_writeable(self.writeable)   # brokerPermission is not persisted

    @rule()
    def toggle_writes(self):
        self.writeable = not self.writeable
        self.sim.set_writeable(self.writeable)

    @invariant()
    def no_invariant_broke(self):
        assert self.sim.checker.violations == [], [str(v) for v in self.sim.checker.violations]

    @invariant()
    def the_broker_core_is_consistent(self):
        self.sim.core._check()          # (the store's invariants included)

    @invariant()
    def only_poison_reaches_the_dlq(self):
        fates = self.sim.checker.fates["SimGroup"]
        for n, fate in enumerate(fates):
            if fate.dead:
                assert n % 3 == POISON, f"message #{n} is not poison but was dead-lettered"
            if fate.succeeded:
                assert n % 3 != POISON, f"poison message #{n} was consumed successfully"

    def teardown(self):
        try:
            self.sim.set_writeable(True)
            self.sim.advance(6 * 3600 * 1000)               # the whole (short) ladder, with margin
            fates = self.sim.checker.fates["SimGroup"]
            assert len(fates) == len(self.accepted)
            for n in self.accepted:
                fate = fates[n]
                # reconsumeTimes of the copies the broker stored (a copy retried by the
                # client itself after a refused send-back fails again under the same copy)
                stored = sorted({min(k for k, _, p, _ in fate.failures if p == phys)
                                 for _, _, phys, _ in fate.failures})
                if n % 3 == POISON:
                    assert fate.dead and not fate.succeeded
                    assert stored == [0, 1, 2]
                else:
                    assert fate.succeeded and not fate.dead
                    assert stored == ([0] if n % 3 == FAIL_ONCE else [])
            result = self.sim.finish()
            assert result.ok, [str(v) for v in result.violations]
            poison = sum(1 for n in self.accepted if n % 3 == POISON)
            assert result.summary()["dead_lettered"] == poison or (self.crashed and
                                                                     result.summary()["dead_lettered"] >= poison)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


TestBrokerAndClients = BrokerAndClients.TestCase
TestBrokerAndClients.settings = settings(max_examples=12, stateful_step_count=15, deadline=None)


def test_generated_scenarios_keep_every_invariant(tmp_path_factory):
    """Scenarios from the exported strategy, faults included, run clean."""
    from hypothesis import given

    from rocketmq_emulator.client_sdk.simulation import run_simulation

    @settings(max_examples=8, deadline=None)
    @given(scenarios(max_messages=60))
    def check(scenario):
        result = run_simulation(scenario, tmp_path_factory.mktemp("sim"))
        assert result.ok, [str(v) for v in result.violations]
        assert result.accepted == scenario.messages

    check()
