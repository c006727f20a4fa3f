"""A core crashed as a killed process leaves it, its records read back raw, and what its
stores hold accounted (broker/facade/admin.py, across.store_accounts): the simulator's
crash and its checks, through the door."""
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.facade.across import store_accounts
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, EmbeddedBroker, Message
from rocketmq_emulator.delay_scheduler import VirtualClock
from rocketmq_emulator.store.accounting import Ledger, account_message_stores, ledger_accounts


def test_a_crashed_core_keeps_what_it_acknowledged_and_loses_offsets_it_had_not_flushed(tmp_path):
    clock = VirtualClock()
    core = BrokerCore.open(tmp_path, clock)
    broker = EmbeddedBroker(core)
    broker.create_topic("Orders", queues=1)
    sent = broker.producer("pg").send(Message("Orders", b"kept"))
    broker.push_consumer("cg", "Orders", listener=lambda msgs, ctx: CONSUME_SUCCESS)
    broker.advance("10s")                              # consumed and committed, not flushed
    assert core.stored_offset("cg", "Orders", 0) == 1
    core.crash()
    assert core.close() is None                        # done: nothing more is written
    again = BrokerCore.open(tmp_path, VirtualClock())  # the directory released, recovered
    phys = int(sent.offset_msg_id[-16:], 16)
    raw = again.record_bytes_at(phys)
    assert raw is not None and b"kept" in raw and sent.msg_id.encode() in raw
    assert again.stored_offset("cg", "Orders", 0) == -1     # the commit the crash lost
    again.close()


def test_a_records_bytes_are_read_where_one_starts_and_nowhere_else():
    broker = EmbeddedBroker()
    broker.create_topic("Orders", queues=1)
    first = broker.producer("pg").send(Message("Orders", b"one"))
    phys = int(first.offset_msg_id[-16:], 16)
    raw = broker.core.record_bytes_at(phys)
    assert raw == broker.core.queue_records("Orders", 0)[0]
    assert broker.core.record_bytes_at(phys + 1) is None
    assert broker.core.record_bytes_at(10 ** 9) is None


def test_the_stores_accounts_are_the_stores_own_walked_or_from_a_ledger():
    ledger = Ledger()
    broker = EmbeddedBroker(brokers=2)
    cores = [broker.cluster.core(name) for name in broker.cluster.names]
    for i, core in enumerate(cores):
        core.add_stored_hook(ledger.stored if i == 0 else
                             lambda rec, msg_id, props, part=i: ledger.stored(rec, msg_id, props, part))
    broker.create_topic("Orders", queues=2)
    producer = broker.producer("pg")
    for i in range(6):
        producer.send(Message("Orders", b"m%d" % i))
    broker.push_consumer("cg", "Orders", listener=lambda msgs, ctx: CONSUME_SUCCESS)
    broker.advance("10s")
    stores = [core.store for core in cores]
    walked = store_accounts(cores)
    assert walked.summary() == account_message_stores(stores).summary()
    assert walked.produced == 6 and walked.succeeded == 6
    assert store_accounts(cores, ledger).summary() == ledger_accounts(ledger, stores).summary() == walked.summary()
