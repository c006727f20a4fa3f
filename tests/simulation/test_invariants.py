"""The invariants catch planted bugs, and stay quiet on correct runs with faults."""
from __future__ import annotations

import pytest

from rocketmq_emulator.client_sdk import PushConsumer
from rocketmq_emulator.client_sdk.api import PullStatus
from rocketmq_emulator.client_sdk.simulation import (ConsumerRestart, GroupSpec, InvariantChecker, Scenario, Simulation,
                                   WriteOffWindow, run_simulation)
from rocketmq_emulator.client_sdk.simulation.scenario import ScenarioError

from .conftest import W1, small


class CommitsOnArrival(PushConsumer):
    """Planted bug: commits a pull's nextBeginOffset as soon as the messages arrive,
    before the listener has seen them."""

    def _on_pull(self, pr, sub, resp, err):
        if err is None and resp.status is PullStatus.FOUND:
            self.offset_store.update(pr.mq, resp.next_begin_offset, False)
        super()._on_pull(pr, sub, resp, err)


class LosesSendBacks(PushConsumer):
    """Planted bug: reports every send-back as done without sending it."""

    def send_message_back(self, msg, delay_level=0, broker_name=None):
        return True


def kinds(result):
    return {v.invariant for v in result.violations}


def test_committing_past_an_unacked_message_is_caught(store_dir):
    result = Simulation(small(), store_dir, consumer_class=CommitsOnArrival).run()
    assert "commit" in kinds(result)
    first = next(v for v in result.violations if v.invariant == "commit")
    assert "is not consumed yet" in first.message and first.step > 0


def test_a_lost_send_back_is_caught(store_dir):
    result = Simulation(small(), store_dir, consumer_class=LosesSendBacks).run()
    lost = [v for v in result.violations if v.invariant == "lost"]
    # the 2 poison and 20 fail-once messages of 200 were failed and never came back
    assert len(lost) == 22 and not result.settled
    assert "#0 " in lost[0].message and "never consumed nor dead-lettered" in lost[0].message


def test_a_correct_run_with_every_fault_keeps_every_invariant(store_dir):
    scenario = small(messages=300, groups=(GroupSpec(batch_size=4, fail_probability=0.02, **W1),),
                     crashes_ms=(2_000, 20 * 60_000), write_off=(WriteOffWindow(1_000, 4_000),),
                     consumer_restarts=(ConsumerRestart("SimGroup", 60_000, 30_000),))
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled and result.crashes == 2 and result.refused_sends > 0
    s = result.summary()
    assert s["produced"] == 300 and s["dead_lettered"] >= 3      # at least the 3 poison messages
    assert s["succeeded"] + s["dead_lettered"] >= 300


def test_faults_that_outlast_the_duration_end_while_the_run_settles(store_dir):
    # Found by the exported strategy: a write-off window from 0 to past the duration
    # used to leave the broker read-only for good, so the poison message of an orderly
    # group could never reach the DLQ and the producer never finished.
    orderly = GroupSpec(name="Ordered", orderly=True, max_reconsume_times=3, poison_every=100)
    scenario = Scenario(seed=27034371, messages=27, duration_ms=60_000, groups=(orderly,),
                        write_off=(WriteOffWindow(0, 65_537),),
                        consumer_restarts=(ConsumerRestart("Ordered", 50_000, 40_000),))
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled and result.accepted == 27 and result.refused_sends > 0
    assert result.summary()["dead_lettered"] == 1                 # message #0, the poison one
    # a fault that would start after the duration would never happen: it is refused
    for late in ({"write_off": (WriteOffWindow(61_000, 62_000),)}, {"crashes_ms": (70_000,)}):
        with pytest.raises(ScenarioError, match="after the end of the run"):
            Scenario(seed=1, messages=20, duration_ms=60_000, groups=(orderly,), **late)


def test_without_faults_a_poison_message_fails_exactly_max_plus_one_times(store_dir):
    result = run_simulation(small(messages=100), store_dir)
    assert result.ok and result.settled
    s = result.summary()
    # 1 poison (17 deliveries), 10 fail-once (2 each), 89 fine: the W1 count 1.26 * N
    assert result.deliveries == 126
    assert (s["produced"], s["succeeded"], s["dead_lettered"], s["send_backs"]) == (100, 99, 1, 10 + 17)


def test_a_smaller_max_reconsume_times_dead_letters_sooner(store_dir):
    result = run_simulation(small(messages=100, groups=(GroupSpec(max_reconsume_times=2, **W1),)), store_dir)
    assert result.ok and result.deliveries == 100 + 10 + 2   # poison: 3 deliveries
    assert result.summary()["dead_lettered"] == 1


def test_slow_listeners_are_sent_back_as_expired_and_retried(store_dir):
    result = run_simulation(small(messages=60, groups=(GroupSpec(slow_probability=0.1),)), store_dir)
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled and result.deliveries > 60             # the overrun ones came again
    assert result.summary()["send_backs"] == result.deliveries - 60


def test_orderly_groups_keep_queue_order_through_failures_and_dlq(store_dir):
    group = GroupSpec(orderly=True, max_reconsume_times=3, fail_probability=0.1, **W1)
    result = run_simulation(small(messages=200, groups=(group,), crashes_ms=(5 * 60_000,)), store_dir)
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled and result.summary()["dead_lettered"] >= 2


def _checker(delays=(1000, 5000, 10000, 30000)):
    scenario = Scenario(groups=(GroupSpec(name="G", max_reconsume_times=3),))
    checker = InvariantChecker(scenario, list(delays), 0)
    checker.accepted(0, "UNIQ0", "OFFSET0")
    return checker, scenario.groups[0]


class _Msg:
    def __init__(self, k, phys, origin="OFFSET0", uniq="UNIQ0", offset=0):
        self.reconsume_times, self.commit_log_offset, self.msg_id, self.queue_offset = k, phys, uniq, offset
        self.properties = {"ORIGIN_MESSAGE_ID": origin}
        self.body = b"00000000|"


def test_checker_flags_an_early_retry_but_not_a_local_one():
    checker, g = _checker()
    fate = checker.delivered(g, 0, _Msg(0, 100), "T", 0)
    checker.failed(g, fate, _Msg(0, 100), 0)            # level 3 = 10 s
    checker.delivered(g, 0, _Msg(1, 200), "%RETRY%G", 9_999)
    assert [v.invariant for v in checker.violations] == ["retry_delay"]
    checker, g = _checker()
    fate = checker.delivered(g, 0, _Msg(0, 100), "T", 0)
    checker.failed(g, fate, _Msg(0, 100), 0)
    checker.delivered(g, 0, _Msg(1, 100), "T", 5_000)  # same copy: the client's 5 s local retry
    assert checker.violations == []


def test_checker_flags_a_changed_identity_and_too_many_attempts():
    checker, g = _checker()
    checker.delivered(g, 0, _Msg(0, 100, uniq="OTHER"), "T", 0)
    checker.delivered(g, 0, _Msg(1, 200, origin="WRONG"), "%RETRY%G", 0)
    checker.delivered(g, 0, _Msg(4, 300), "%RETRY%G", 0)   # max is 3
    assert [v.invariant for v in checker.violations] == ["identity", "identity", "attempts"]


def test_checker_flags_a_commit_past_an_unfinished_offset_and_out_of_order_delivery():
    checker, g = _checker()
    checker.finished("G", "T", 0, 0, 0, False)
    checker.offset_committed("G", "T", 0, 1, 0)          # fine: offset 0 is done
    checker.offset_committed("G", "T", 0, 3, 0)          # offsets 1 and 2 are not
    checker.check_order("G", "T", 0, 2, 0)               # orderly: 2 before 1
    assert [v.invariant for v in checker.violations] == ["commit", "order"]
