"""`rocketmq-emulator offset reset` (mqadmin resetOffsetByTime): with the group's consumer
online the broker tells it (RESET_CONSUMER_CLIENT_OFFSET) and it consumes again from
there; with nobody online the offsets are set on the broker, as mqadmin's fallback does."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, Message, Producer, PushConsumer, RemoteBroker
from tests.support.processes import EmulatorProcess


@pytest.fixture
def server(tmp_path):
    s = EmulatorProcess(tmp_path / "store", "--clock", "virtual").start()
    s.remote = RemoteBroker(s.address)
    assert main(["topic", "create", "Orders", "--queues", "2", "--server", s.address]) == 0
    producer = Producer("pg", s.remote).start()
    for i in range(6):
        producer.send(Message("Orders", b"m%d" % i))
    producer.shutdown()
    yield s
    s.remote.close()
    s.stop()


def consume(server, seen):
    c = PushConsumer("billing", server.remote, persist_consumer_offset_interval=100)
    c.subscribe("Orders", "*")
    c.register_message_listener(lambda msgs, ctx: seen.extend(m.body for m in msgs) or CONSUME_SUCCESS)
    c.start()
    return c


def committed(server, capsys) -> int:
    assert main(["group", "show", "billing", "--json", "--server", server.address]) == 0
    return sum(q["consumer_offset"] for q in json.loads(capsys.readouterr().out)["queues"])


def test_an_online_consumer_is_moved_back_and_consumes_again(server, capsys):
    seen: list = []
    c = consume(server, seen)
    assert server.remote.run_until(lambda: len(seen) == 6, "15s")
    assert main(["offset", "reset", "billing", "Orders", "--to", "earliest", "--server", server.address]) == 0
    out = capsys.readouterr().out
    assert out.count("consumers told") == 2 and "offset 0" in out
    assert server.remote.run_until(lambda: len(seen) == 12, "15s")
    assert sorted(seen[6:]) == sorted(seen[:6])
    c.shutdown()


def test_with_nobody_online_the_offsets_are_set_on_the_broker(server, capsys):
    seen: list = []
    c = consume(server, seen)
    assert server.remote.run_until(lambda: len(seen) == 6, "15s")
    c.shutdown()
    assert committed(server, capsys) == 6
    assert main(["offset", "reset", "billing", "Orders", "--to", "earliest", "--json",
                 "--server", server.address]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["how"] for r in rows} == {"set on the broker"} and [r["offset"] for r in rows] == [0, 0]
    assert committed(server, capsys) == 0
    assert main(["offset", "reset", "billing", "Orders", "--to", "latest", "--server", server.address]) == 0
    capsys.readouterr()
    assert committed(server, capsys) == 6
    again: list = []
    c = consume(server, again)
    server.remote.run_for("300ms")
    assert again == []                              # at the end: nothing to consume again
    c.shutdown()


@pytest.mark.parametrize("argv, message", [
    (["--to", "yesterday"], "--to takes earliest, latest"),
    (["--to", "earliest", "--topic-typo"], "unrecognized arguments"),
])
def test_bad_input_is_one_line(server, capsys, argv, message):
    assert main(["offset", "reset", "billing", "Orders", *argv, "--server", server.address]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_an_unknown_topic_is_refused(server, capsys):
    assert main(["group", "create", "billing", "--server", server.address]) == 0
    assert main(["offset", "reset", "billing", "Nope", "--to", "earliest", "--server", server.address]) == 2
    assert "no topic named 'Nope' on any broker" in capsys.readouterr().err
