"""Producer access modes (issue 41, item 3), as Pulsar's broker decides them: Exclusive
(a second producer is refused: ProducerFenced, or ProducerBusy for a Shared one),
ExclusiveWithFencing (the new producer fences the old one, whose sends then fail), and
WaitForExclusive (waits until the holder closes) — with the real client against
`serve`, and in raw frames what it hides (PRODUCER_SUCCESS with producer_ready=false,
then the second one; the topic epoch)."""
from __future__ import annotations

import threading

import pytest

from rocketmq_emulator.broker.fronts.pulsar import schema as s
from tests.broker.fronts.pulsar.raw import connected, producer, pushed, send, call, command
from tests.support.processes import wait_for
from tests.support.pulsar_http import client_of, serve_pulsar

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
Mode = pulsar.ProducerAccessMode


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s_ = serve_pulsar(tmp_path_factory.mktemp("modes") / "store")
    yield s_
    s_.stop()


@pytest.fixture
def client(server):
    c = client_of(server, timeout=5)
    yield c
    c.close()


@pytest.mark.interop
def test_an_exclusive_producer_keeps_others_out_until_it_closes(client):
    first = client.create_producer("excl", access_mode=Mode.Exclusive)
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer("excl", access_mode=Mode.Exclusive)
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer("excl")                          # Shared
    first.send(b"mine")
    first.close()
    again = client.create_producer("excl", access_mode=Mode.Exclusive)
    again.send(b"next holder")
    shared = client.create_producer("shared-first")
    with pytest.raises(pulsar.ProducerFenced):                  # "Topic has existing shared producers"
        client.create_producer("shared-first", access_mode=Mode.Exclusive)
    shared.send(b"still fine")


@pytest.mark.interop
def test_exclusive_with_fencing_takes_the_topic_and_the_old_producers_sends_fail(client):
    old = client.create_producer("fenced", access_mode=Mode.Exclusive)
    old.send(b"before")
    new = client.create_producer("fenced", access_mode=Mode.ExclusiveWithFencing)
    new.send(b"from the new one")
    with pytest.raises(pulsar.ProducerFenced):
        wait_for(lambda: old.send(b"from the old one") and False, timeout=10)
    reader = client.create_reader("fenced", pulsar.MessageId.earliest)
    assert [reader.read_next(5000).data() for _ in range(2)] == [b"before", b"from the new one"]
    assert not reader.has_message_available()


@pytest.mark.interop
def test_wait_for_exclusive_waits_until_the_holder_closes(client):
    holder = client.create_producer("waiting", access_mode=Mode.Exclusive)
    made = []
    waiter = threading.Thread(target=lambda: made.append(
        client.create_producer("waiting", access_mode=Mode.WaitForExclusive)), daemon=True)
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and not made                       # still waiting
    holder.send(b"holder's")
    holder.close()
    waiter.join(10)
    assert made
    made[0].send(b"waiter's")
    reader = client.create_reader("waiting", pulsar.MessageId.earliest)
    assert [reader.read_next(5000).data() for _ in range(2)] == [b"holder's", b"waiter's"]


def test_raw_frames_the_waiting_producer_is_told_it_waits_then_that_it_is_ready():
    front, a = connected()
    _, b = connected(front)
    [ok] = producer(front, a, "persistent://public/default/w", producer_access_mode=s.ProducerAccessMode.Exclusive)
    assert ok.type == s.Type.PRODUCER_SUCCESS and ok.producer_success.topic_epoch == 0
    [waiting] = producer(front, b, "persistent://public/default/w", request_id=7,
                         producer_access_mode=s.ProducerAccessMode.WaitForExclusive)
    assert waiting.type == s.Type.PRODUCER_SUCCESS and waiting.producer_success.producer_ready is False
    assert waiting.producer_success.request_id == 7
    assert [r.type for r in send(front, b, 0, 0, b"too early")] == [s.Type.SEND_ERROR]   # not ready yet
    assert [r.type for r in call(front, a, command("CLOSE_PRODUCER", "close_producer", producer_id=0,
                                                   request_id=2))] == [s.Type.SUCCESS]
    [ready] = pushed(b)
    assert ready.type == s.Type.PRODUCER_SUCCESS and ready.producer_success.request_id == 7
    assert ready.producer_success.producer_ready and ready.producer_success.topic_epoch == 1
    assert [r.type for r in send(front, b, 0, 0, b"now")] == [s.Type.SEND_RECEIPT]


def test_raw_frames_a_fenced_producer_coming_back_with_its_old_epoch_is_fenced():
    front, a = connected()
    _, b = connected(front)
    producer(front, a, "persistent://public/default/f", producer_access_mode=s.ProducerAccessMode.Exclusive)
    [ok] = producer(front, b, "persistent://public/default/f",
                    producer_access_mode=s.ProducerAccessMode.ExclusiveWithFencing)
    assert ok.type == s.Type.PRODUCER_SUCCESS and ok.producer_success.topic_epoch == 1
    [closed] = pushed(a)
    assert closed.type == s.Type.CLOSE_PRODUCER and closed.close_producer.producer_id == 0
    [refused] = producer(front, a, "persistent://public/default/f", request_id=3, topic_epoch=0,
                         producer_access_mode=s.ProducerAccessMode.Exclusive)
    assert refused.type == s.Type.ERROR and refused.error.error == s.ServerError.ProducerFenced
    [name_taken] = producer(front, a, "persistent://public/default/g", producer_id=5, request_id=4,
                            producer_name="same")
    assert name_taken.type == s.Type.PRODUCER_SUCCESS
    [busy] = producer(front, b, "persistent://public/default/g", producer_id=6, request_id=5, producer_name="same")
    assert busy.type == s.Type.ERROR and busy.error.error == s.ServerError.ProducerBusy
