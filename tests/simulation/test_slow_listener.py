"""A "slow" delivery: the listener overruns consumeTimeout while the rest of the world
goes on — the clients' timers, other listeners, and the fault timeline, each action at
its own time (a crash kills the process inside the listener). The consumer's expiry
scan sends the batch back when it can; when it cannot (broker read-only), the message
stays in flight and the listener's own late verdict decides it."""
from __future__ import annotations

from rocketmq_emulator.client_sdk.simulation import (ConsumerRestart, GroupSpec, Scenario, Simulation, WriteOffWindow,
                                                    run_simulation)
from rocketmq_emulator.client_sdk.simulation.scenario import ProducerSpec, TopicSpec

from .conftest import commit_log_bytes

MINUTE = 60_000
# Every delivery overruns; maxReconsumeTimes 0: the first send-back dead-letters it,
# so a run stays short (each overrun is 31 virtual minutes).
ALWAYS_SLOW = GroupSpec(name="Slow", max_reconsume_times=0, slow_probability=1.0)


def one_queue(**kw) -> Scenario:
    kw.setdefault("groups", (ALWAYS_SLOW,))
    kw.setdefault("duration_ms", 10 * MINUTE)
    return Scenario(topics=(TopicSpec(queues=1),), producers=(ProducerSpec(rate=10.0, body_size=20),), **kw)


class Recording(Simulation):
    """Notes the virtual time of every fault action."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.actions = []

    def set_writeable(self, writeable):
        self.actions.append(("writeable" if writeable else "read-only", self.elapsed_ms))
        super().set_writeable(writeable)

    def _boot(self):
        if self.boots:                 # every boot after the first is a restart after a crash
            self.actions.append(("crash", self.elapsed_ms))
        super()._boot()


def test_a_write_off_window_opens_and_closes_on_time_while_a_listener_overruns(store_dir):
    scenario = one_queue(messages=1, write_off=(WriteOffWindow(MINUTE, 2 * MINUTE),))
    sim = Recording(scenario, store_dir)
    result = sim.run()
    # message #0 is delivered at 0 and its listener runs until 31 min: the window is inside
    assert sim.actions == [("read-only", MINUTE), ("writeable", 2 * MINUTE)]
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled and result.summary()["dead_lettered"] == 1


def test_a_crash_kills_the_process_inside_an_overrunning_listener_at_its_time(store_dir):
    scenario = one_queue(messages=2, crashes_ms=(5 * MINUTE,))
    sim = Recording(scenario, store_dir)
    result = sim.run()
    assert sim.actions == [("crash", 5 * MINUTE)]
    assert result.ok, [str(v) for v in result.violations]
    assert result.crashes == 1 and result.settled
    assert result.summary()["dead_lettered"] == 2      # each overran (again after the restart) and was sent back


def test_runs_with_overruns_and_faults_stay_deterministic(tmp_path):
    scenario = one_queue(messages=3, crashes_ms=(5 * MINUTE,), write_off=(WriteOffWindow(MINUTE, 3 * MINUTE),))
    a = run_simulation(scenario, tmp_path / "a")
    b = run_simulation(scenario, tmp_path / "b")
    assert a.ok and b.ok, a.violations + b.violations
    assert commit_log_bytes(tmp_path / "a") == commit_log_bytes(tmp_path / "b")


def test_an_overrun_the_expiry_could_not_send_back_is_decided_by_the_listener(store_dir):
    # Message #0 is poison and every delivery overruns. Its first overrun (0..31 min)
    # meets the expiry scan at 30 min inside a read-only window: the send-back fails and
    # the message stays in flight, so the listener's late RECONSUME_LATER counts (a local
    # retry 5 s later, still read-only); that second overrun is sent back at 60 min and
    # dead-lettered (maxReconsumeTimes 0).
    poison = GroupSpec(name="Slow", max_reconsume_times=0, slow_probability=1.0, poison_every=100)
    scenario = one_queue(messages=1, groups=(poison,), duration_ms=30 * MINUTE,
                         write_off=(WriteOffWindow(29 * MINUTE, 32 * MINUTE),))
    sim = Recording(scenario, store_dir)
    result = sim.run()
    assert sim.actions == [("read-only", 29 * MINUTE), ("writeable", 32 * MINUTE)]
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled and result.deliveries == 2 and result.summary()["dead_lettered"] == 1


def test_a_late_success_the_expiry_could_not_send_back_counts_as_consumed(store_dir):
    # Same, but the listener's late verdict is success: the consumer acks the message
    # (upstream does the same), and the checker must count it consumed, not lost.
    scenario = one_queue(messages=1, duration_ms=30 * MINUTE, write_off=(WriteOffWindow(29 * MINUTE, 32 * MINUTE),))
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled and result.deliveries == 1
    s = result.summary()
    assert s["dead_lettered"] == 0 and s["succeeded"] == 1


def test_seed_0_slow_poison_with_a_long_write_off_window_loses_nothing(store_dir):
    """The hypothesis-found scenario: message #0 of SimGroup0 is poison; a local retry at
    30 s (the broker read-only from 2.9 s to 102.9 s) overran consumeTimeout. Its listener
    jumped the clock 31 min before the window's end ran, so the expiry scan at 30 min
    found the broker still read-only and could not send it back; the listener's late
    success acked it, while the checker had counted it failed: 'lost'."""
    g0 = GroupSpec(name="SimGroup0", poison_every=100, slow_probability=0.02)
    g1 = GroupSpec(name="SimGroup1")
    scenario = Scenario(seed=0, messages=43, duration_ms=MINUTE, settle_ms=6 * 3600 * 1000,
                        topics=(TopicSpec(queues=1),), producers=(ProducerSpec(rate=10.0, body_size=9),),
                        groups=(g0, g1), write_off=(WriteOffWindow(0, 1), WriteOffWindow(2915, 102916)))
    sim = Recording(scenario, store_dir)
    result = sim.run()
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled and result.accepted == 43
    assert sim.actions == [("read-only", 0), ("writeable", 1), ("read-only", 2915), ("writeable", 102916)]


def test_a_group_stopped_while_its_listener_overruns_gets_the_rest_again(store_dir):
    # Found by exploring: message #18 overruns from 18 ms; the group stops and starts at
    # 27 ms, on time now, inside that overrun. #18 still holds the committed offset, so
    # the new consumer gets #18..#20 again; poison #20 had already been sent back once,
    # so it climbs the retry ladder twice. At-least-once, as after a crash: allowed.
    g0 = GroupSpec(name="SimGroup0", poison_every=10, fail_probability=0.05, slow_probability=0.1)
    g1 = GroupSpec(name="SimGroup1", orderly=True, max_reconsume_times=0)
    scenario = Scenario(seed=0, messages=21, duration_ms=MINUTE, topics=(TopicSpec(queues=1),),
                        producers=(ProducerSpec(rate=1000.0, body_size=9),), groups=(g0, g1),
                        consumer_restarts=(ConsumerRestart("SimGroup0", 27, 0),))
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    # poison #0, #10 and #20, and #20's second climb
    assert result.settled and result.per_group["SimGroup0"]["dead_lettered"] == 4


def test_the_retry_of_an_expired_overrun_may_come_before_the_listener_returns(store_dir):
    # Two crashes at 0 leave message #0 (poison) in several lineages; overruns nest, and
    # the expiry's level-3 retry of one comes while its listener still runs. The checker
    # must already know that failure (it records it when the overrun starts, and takes it
    # back only if the expiry could not send the message back).
    scenario = Scenario(seed=0, messages=1, duration_ms=MINUTE, topics=(TopicSpec(queues=1),),
                        producers=(ProducerSpec(rate=10.0, body_size=9),),
                        groups=(GroupSpec(name="SimGroup0", poison_every=10, slow_probability=0.1),),
                        crashes_ms=(0, 0))
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled and result.crashes == 2 and result.deliveries == 50
