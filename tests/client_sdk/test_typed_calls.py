"""The in-process transport's typed calls (issue 19 item 1): a send and a send-back go
to the core's typed operations, no command built. They must store exactly what the
command path stores and fail exactly as it fails — compared here against the loopback
transport, whose every call crosses the real 4.x codec."""
from __future__ import annotations

import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode, ResponseCode
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, RECONSUME_LATER, EmbeddedBroker, Message
from rocketmq_emulator.client_sdk.errors import MQBrokerError


def stored_records(broker: EmbeddedBroker) -> list[bytes]:
    """Every record in the commit log, in order, as bytes."""
    store = broker.core.store
    out, offset = [], store.commit_log_min_offset
    while offset < store.commit_log_max_offset:
        raw = store.read(offset)
        out.append(bytes(raw))
        offset += len(raw)
    return out


def produce_and_retry(transport: str) -> EmbeddedBroker:
    broker = EmbeddedBroker(transport=transport, pid=77)
    broker.create_topic("T", 2)
    p = broker.producer("pg")
    p.send(Message("T", b"plain"))
    p.send(Message("T", b"tagged", tags="TagA", keys=["k1", "k2"], properties={"a": "1", "empty": ""}))
    p.send(Message("T", b"delayed", delay_time_level=2))
    p.send(Message("T", b"x" * 5000))                                       # compressed
    p.send(Message("T", b"timer", properties={"TIMER_DELAY_SEC": "30"}))
    seen: dict[bytes, int] = {}

    def listener(msgs, ctx):
        body = msgs[0].body
        seen[body] = seen.get(body, 0) + 1
        return RECONSUME_LATER if seen[body] == 1 else CONSUME_SUCCESS      # each fails once: a send-back

    broker.push_consumer("cg", "T", listener=listener)
    assert broker.run_until(lambda: len(seen) == 5 and all(v == 2 for v in seen.values()), "2h")
    return broker


def test_typed_sends_and_send_backs_store_the_same_bytes_as_commands():
    typed, wired = produce_and_retry("inprocess"), produce_and_retry("loopback")
    assert wired.hub.typed_calls is False and typed.hub.typed_calls is True
    a, b = stored_records(typed), stored_records(wired)
    assert len(a) > 10 and a == b
    typed.close()
    wired.close()


@pytest.mark.parametrize("transport", ["inprocess", "loopback"])
def test_a_refused_send_raises_the_same_error(transport):
    broker = EmbeddedBroker(transport=transport)
    broker.create_topic("T", 1)
    p = broker.producer("pg", retry_times_when_send_failed=0)
    p.send(Message("T", b"first"))                  # the route is cached now
    broker.set_writeable(False)
    with pytest.raises(MQBrokerError) as exc:
        p.send(Message("T", b"x"))
    assert exc.value.code == ResponseCode.NO_PERMISSION and "forbidden" in str(exc.value)
    broker.close()


def test_an_observer_sees_every_send_as_a_command():
    broker = EmbeddedBroker()
    broker.create_topic("T", 1)
    seen = []
    broker.hub.observe(lambda transport, cmd: seen.append(cmd.code))
    broker.producer("pg").send(Message("T", b"x"))
    assert RequestCode.SEND_MESSAGE_V2 in seen
    broker.close()


def test_in_process_clients_send_no_command_at_all(commands_made):
    """Issue 37: in process every call is typed end to end — sends, pulls and their held
    answers with the records, send-backs, offsets, heartbeats, routes, rebalancing, the
    consumer-ids notification, shutdown — no RemotingCommand is built, no header
    written. (The loopback transport, every command through the codec, is the check
    that the two paths store the same bytes: the test above.)"""
    broker = produce_and_retry("inprocess")
    broker.push_consumer("cg2", "T", listener=lambda msgs, ctx: CONSUME_SUCCESS)   # the group's ids change
    broker.advance("2h")                                    # periodic heartbeats, offsets, routes, rebalances
    broker.close()
    assert commands_made == []
