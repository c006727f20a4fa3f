"""EmbeddedBroker(brokers=2): the SDK against two brokers behind one name server in this
process, on the virtual clock - seed 004's cluster fallbacks without a JVM."""
from __future__ import annotations

import pytest

from rocketmq_emulator.broker.cluster import ClusterError
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, RECONSUME_LATER, EmbeddedBroker, Message, MessageQueue
from tests.client_sdk.test_sdk_over_transports import collecting


@pytest.fixture
def cluster():
    broker = EmbeddedBroker(brokers=2)
    broker.create_topic("Orders", 2)
    yield broker
    broker.close()


def test_clients_spread_over_both_brokers(cluster):
    p = cluster.producer("pg")
    sent = [p.send(Message("Orders", b"m%d" % i)) for i in range(8)]
    assert sorted(r.message_queue.broker_name for r in sent) == ["broker-a"] * 4 + ["broker-b"] * 4
    got: list = []
    cluster.push_consumer("cg", "Orders", listener=collecting(got))
    assert cluster.run_until(lambda: len(got) == 8)
    assert sorted(cluster.broker_of(m) for m in got) == ["broker-a"] * 4 + ["broker-b"] * 4
    assert {b.name: b.topics > 0 for b in cluster.brokers()} == {"broker-a": True, "broker-b": True}


def test_a_producer_leaves_a_write_off_broker(cluster):
    p = cluster.producer("pg")
    cluster.set_writeable(False, "broker-a")
    assert {p.send(Message("Orders", b"x")).message_queue.broker_name for _ in range(6)} == {"broker-b"}
    assert cluster.max_offset("Orders", 0, broker="broker-a") + cluster.max_offset("Orders", 1, broker="broker-a") == 0


def test_a_refused_send_back_falls_back_to_the_inner_producer_and_the_offset_waits_for_it(cluster):
    cluster.producer("pg").send(Message("Orders", b"poison"), MessageQueue("Orders", "broker-a", 0))
    cluster.set_writeable(False, "broker-a")
    seen: list = []
    c = cluster.push_consumer("cg", "Orders", listener=collecting(seen, lambda m: RECONSUME_LATER
                                                                if m.reconsume_times == 0 else CONSUME_SUCCESS))
    assert cluster.run_until(lambda: len(seen) == 1)
    assert cluster.run_until(lambda: c.stats.fallback_ok == 1, "1s")
    # the copy is on broker-b's %RETRY%cg, waiting for level 3; the original offset is committed
    [copy] = cluster.scheduled_messages("%RETRY%cg")
    assert cluster.broker_of(copy) == "broker-b" and copy.reconsume_times == 1
    cluster.advance("10s")
    assert cluster.run_until(lambda: len(seen) == 2, "1s")
    assert [(cluster.broker_of(m), m.reconsume_times) for m in seen] == [("broker-a", 0), ("broker-b", 1)]
    assert cluster.run_until(lambda: cluster.committed_offset("cg", "Orders", 0, broker="broker-a") == 1)


def test_when_the_fallback_fails_too_the_message_is_consumed_again_locally_and_the_offset_waits(cluster):
    cluster.producer("pg").send(Message("Orders", b"poison"), MessageQueue("Orders", "broker-a", 0))
    cluster.set_writeable(False, "broker-a")
    cluster.set_writeable(False, "broker-b")           # no broker takes the copy: the 5 s local retry
    seen: list = []
    c = cluster.push_consumer("cg", "Orders", listener=collecting(seen, lambda m: RECONSUME_LATER))
    assert cluster.run_until(lambda: c.stats.fallback_failed >= 1, "1s")
    cluster.advance("6s")
    assert len(seen) == 2 and c.stats.fallback_failed == 2               # consumed again here after 5 s
    assert cluster.committed_offset("cg", "Orders", 0, broker="broker-a") in (-1, 0)     # not past the message
    cluster.set_writeable(True, "broker-b")
    assert cluster.run_until(lambda: c.stats.fallback_ok == 1, "30s")
    assert c.stats.send_back_ok == 0                                      # broker-a refused every send-back
    assert cluster.run_until(lambda: cluster.committed_offset("cg", "Orders", 0, broker="broker-a") == 1)


def test_a_stopped_brokers_queues_are_rebalanced_away_and_come_back(cluster):
    p = cluster.producer("pg")
    got: list = []
    cluster.push_consumer("cg", "Orders", listener=collecting(got))
    cluster.stop_broker("broker-b")
    assert [b.up for b in cluster.brokers()] == [True, False]
    sent = [p.send(Message("Orders", b"down%d" % i)) for i in range(4)]
    assert {r.message_queue.broker_name for r in sent} == {"broker-a"}
    assert cluster.run_until(lambda: len(got) == 4)
    cluster.start_broker("broker-b")
    fresh = cluster.producer("pg2")
    sent = [fresh.send(Message("Orders", b"up%d" % i)) for i in range(8)]
    assert {r.message_queue.broker_name for r in sent} == {"broker-a", "broker-b"}
    assert cluster.run_until(lambda: len(got) == 12, "2m")
    assert sorted(m.body for m in got) == sorted([b"down%d" % i for i in range(4)] + [b"up%d" % i for i in range(8)])


def test_faults_are_refused_in_one_line(cluster):
    with pytest.raises(ClusterError, match="no broker named 'broker-c'"):
        cluster.stop_broker("broker-c")
    cluster.create_topic("OnlyB", 1, broker="broker-b")
    with pytest.raises(ClusterError, match="last broker up serving topic OnlyB"):
        cluster.stop_broker("broker-b")
    with pytest.raises(ValueError, match="needs a cluster"):
        EmbeddedBroker().stop_broker("broker-a")
    with pytest.raises(ValueError, match="1 to 26 brokers"):
        EmbeddedBroker(brokers=0)


@pytest.mark.rocketmq_broker(brokers=2)
def test_the_fixture_takes_the_cluster_size(rocketmq_broker):
    assert [b.name for b in rocketmq_broker.brokers()] == ["broker-a", "broker-b"]


def test_the_accounting_follows_a_copy_to_the_other_broker(cluster):
    """The original on broker-b, its fallback copy on broker-a (stored first in neither
    log's order): one message, one send-back, one success - not a success on broker-b
    and a stray copy on broker-a."""
    from rocketmq_emulator.store.accounting import account_message_store, account_message_stores

    cluster.producer("pg").send(Message("Orders", b"flaky"), MessageQueue("Orders", "broker-b", 0))
    cluster.set_writeable(False, "broker-b")
    seen: list = []
    c = cluster.push_consumer("cg", "Orders", listener=collecting(seen, lambda m: RECONSUME_LATER
                                                                  if m.reconsume_times == 0 else CONSUME_SUCCESS))
    cluster.advance("30s")
    assert [(cluster.broker_of(m), m.reconsume_times) for m in seen] == [("broker-b", 0), ("broker-a", 1)]
    assert c.stats.fallback_ok == 1
    c.persist_offsets()
    stores = [cluster.cluster.core(n).store for n in ("broker-a", "broker-b")]
    accounts = account_message_stores(stores)
    assert accounts.summary() == {"produced": 1, "succeeded": 1, "dead_lettered": 0, "send_backs": 1}
    [orders] = [g for g in accounts.per_group if g.topic == "Orders"]
    assert (orders.group, orders.retried) == ("cg", {1: 1})               # the message, retried once
    # each broker alone counts the message twice: broker-b its success at attempt 0 (no
    # send-back there), broker-a a success of a message it never saw produced
    assert account_message_store(stores[1]).summary()["succeeded"] == 1
    [alone] = [g for g in account_message_store(stores[0]).per_group if g.group == "cg"]
    assert (alone.produced, alone.succeeded) == (0, 1)


def test_a_consumer_resumes_the_queues_of_a_broker_that_comes_back(cluster):
    """While broker-b is down the consumer's rebalance drops its queues there; the offset
    it cannot persist to broker-b is logged, not raised (upstream's persist), so the
    queues come back after the restart and the retries go on."""
    cluster.producer("pg").send(Message("Orders", b"poison"), MessageQueue("Orders", "broker-b", 0))
    seen: list = []
    cluster.push_consumer("cg", "Orders", listener=collecting(seen, lambda m: RECONSUME_LATER),
                          max_reconsume_times=6)
    cluster.advance("5m")                       # the first delivery and retries at 10 s, 30 s, 1 m, 2 m
    before = len(seen)
    assert before == 5
    cluster.stop_broker("broker-b")
    cluster.advance("10m")
    assert len(seen) == before                  # the retries wait on broker-b
    cluster.start_broker("broker-b")
    cluster.advance("1h")
    assert [m.reconsume_times for m in seen] == list(range(7))
    assert [m.body for m in cluster.dlq_messages("cg")] == [b"poison"]
