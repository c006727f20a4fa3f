"""The core's typed send operations (broker/operations.py), called with no 4.x header;
the wire replies are held by tests/broker/test_send.py and test_send_header.py."""
import pytest

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.operations import BatchSendRequest, SendOutcome as O, SendRequest
from rocketmq_emulator.broker.fronts.remoting.protocol.typed import SEND_CODES as _CODES
from rocketmq_emulator.delay_scheduler import VirtualClock

from .wire import read_topic


def test_a_send_is_stored_where_the_result_says(core):
    ch = core.connect()
    result = core.send(SendRequest("PG", "Orders", b"hello", 2, {"TAGS": "a", "WAIT": "true"}), ch)
    assert result.outcome is O.STORED and (result.queue_id, result.queue_offset) == (2, 0)
    [rec] = read_topic(core, "Orders", 2)
    assert rec.offset_msg_id == result.msg_id and rec.body == b"hello"
    assert "WAIT" not in rec.properties_text and rec.properties["CLUSTER"] == core.config.broker_cluster_name


def test_a_delay_level_parks_the_message(core):
    result = core.send(SendRequest("PG", "Orders", b"later", 0, {"DELAY": "3"}), core.connect())
    assert result.outcome is O.STORED
    assert read_topic(core, "Orders", 0) == [] and len(read_topic(core, "SCHEDULE_TOPIC_XXXX", 2)) == 1
    core.advance_clock(10_000)
    assert [r.body for r in read_topic(core, "Orders", 0)] == [b"later"]


def test_a_send_to_the_retry_topic_past_the_maximum_is_dead_lettered(core):
    ch = core.connect()
    core.send(SendRequest("PG", "Orders", b"x", 0), ch)
    kept = core.send(SendRequest("PG", "%RETRY%G", b"again", 0, reconsume_times=1, max_reconsume_times=2), ch)
    dead = core.send(SendRequest("PG", "%RETRY%G", b"dead", 0, reconsume_times=2, max_reconsume_times=2), ch)
    assert kept.outcome is dead.outcome is O.STORED
    assert [r.body for r in read_topic(core, "%RETRY%G")] == [b"again"]
    assert [(r.body, r.properties["DELAY"]) for r in read_topic(core, "%DLQ%G")] == [(b"dead", "0")]


@pytest.mark.parametrize("request_, outcome", [
    (SendRequest("PG", "bad/topic", b"x"), O.TOPIC_ILLEGAL),
    (SendRequest("PG", "SCHEDULE_TOPIC_XXXX", b"x"), O.TOPIC_NOT_ALLOWED),
    (SendRequest("PG", "Orders", b"x", 9), O.QUEUE_ILLEGAL),
    (SendRequest("PG", "Orders", b"x", 0, {"DELAY": "soon"}), O.DELAY_ILLEGAL),
])
def test_each_refusal(core, request_, outcome):
    core.create_topic("Orders", 4)
    result = core.send(request_, core.connect())
    assert result.outcome is outcome and result.remark and not result.msg_id
    assert read_topic(core, "Orders") == []


def test_refusals_that_depend_on_the_broker():
    core = BrokerCore.in_memory(VirtualClock(), BrokerConfig(auto_create_topic_enable=False,
                                                             auto_create_subscription_group=False))
    ch = core.connect()
    assert core.send(SendRequest("PG", "Nope", b"x"), ch).outcome is O.TOPIC_NOT_EXIST
    assert core.send(SendRequest("PG", "%RETRY%Nobody", b"x"), ch).outcome is O.GROUP_NOT_EXIST
    core.set_broker_permission(4)
    assert core.send(SendRequest("PG", "Nope", b"x"), ch).outcome is O.BROKER_NOT_WRITEABLE


def test_a_batch_is_checked_whole_then_stored(core):
    ch = core.connect()
    batch = BatchSendRequest("PG", "Orders", tuple((0, f"b{i}".encode(), {"KEYS": str(i)}) for i in range(3)), 1,
                             {"TAGS": "t"})
    result = core.send_batch(batch, ch)
    assert result.outcome is O.STORED and len(result.msg_id.split(",")) == 3
    records = read_topic(core, "Orders", 1)
    assert [(r.body, r.properties["KEYS"], r.properties["TAGS"]) for r in records] == [
        (b"b0", "0", "t"), (b"b1", "1", "t"), (b"b2", "2", "t")]
    delayed = BatchSendRequest("PG", "Orders", ((0, b"ok", {}), (0, b"late", {"DELAY": "2"})), 1)
    assert core.send_batch(delayed, ch).outcome is O.MESSAGE_ILLEGAL
    assert len(read_topic(core, "Orders", 1)) == 3                     # nothing of it stored
    assert core.send_batch(BatchSendRequest("PG", "%RETRY%G", ((0, b"x", {}),), 0), ch).outcome is O.MESSAGE_ILLEGAL


def test_every_refusal_has_a_4x_code():
    assert set(_CODES) == set(O) - {O.STORED, O.STORE_REFUSED}


def test_send_back_without_a_header(core):
    from rocketmq_emulator.broker.operations import SendBack, SendBackOutcome as B
    from rocketmq_emulator.broker.fronts.remoting.protocol.typed import SEND_BACK_CODES as BACK_CODES

    ch = core.connect()
    stored = core.send(SendRequest("PG", "Orders", b"x", 0), ch)
    phys = int(stored.msg_id[-16:], 16)
    first = core.send_back(SendBack("G", phys))
    assert (first.outcome, first.attempt, first.delay_level) == (B.RETRYING, 1, 3)
    assert core.send_back(SendBack("G", phys, 5)).delay_level == 5            # the consumer's level
    dead = core.send_back(SendBack("G", phys, max_reconsume_times=0))
    assert dead.outcome is B.DEAD_LETTERED and [r.body for r in read_topic(core, "%DLQ%G")] == [b"x"]
    assert core.send_back(SendBack("G", phys + 1)).outcome is B.MESSAGE_NOT_FOUND
    core.set_broker_permission(4)
    assert core.send_back(SendBack("G", phys)).outcome is B.BROKER_NOT_WRITEABLE
    assert set(BACK_CODES) == set(B) - {B.RETRYING, B.DEAD_LETTERED, B.DROPPED}


def test_a_store_host_learnt_after_the_start_is_the_one_sends_stamp(core):
    """serve learns its port after binding and sets it on the core; sends (and the ids they
    answer with) carry that address, not the one the core was built with."""
    core.store_host = ("10.0.0.7", 40123)
    result = core.send(SendRequest("PG", "Orders", b"hello", 0), core.connect())
    [rec] = read_topic(core, "Orders", 0)
    assert rec.store_host == ("10.0.0.7", 40123) and rec.offset_msg_id == result.msg_id
    assert core.message_at(rec.commit_log_offset) is not None
