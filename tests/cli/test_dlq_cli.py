"""`rocketmq-emulator dlq list|redrive` against a running `serve` (and RemoteBroker's
dead_letters / redrive): the table, --json, a dry run, a re-drive that a second one
does not repeat, and bad input in one line with exit 2."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import RECONSUME_LATER, Message, Producer, PushConsumer, RemoteBroker
from rocketmq_emulator.client_sdk.errors import MQBrokerError
from tests.support.processes import EmulatorProcess


@pytest.fixture
def dead(tmp_path):
    """A serve whose group `billing` has two dead letters (maxReconsumeTimes 0: the first
    failure goes to the DLQ)."""
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual").start()
    remote = RemoteBroker(server.address)
    assert main(["topic", "create", "Orders", "--queues", "1", "--server", server.address]) == 0
    producer = Producer("pg", remote).start()
    server.sent = [producer.send(Message("Orders", b"poison-%d" % i, tags="TagP", keys=f"order-{i}"))
                   for i in range(2)]
    failed = []
    consumer = PushConsumer("billing", remote, max_reconsume_times=0)
    consumer.subscribe("Orders", "*")
    consumer.register_message_listener(lambda msgs, ctx: failed.extend(msgs) or RECONSUME_LATER)
    consumer.start()
    assert remote.run_until(lambda: consumer.stats.send_back_ok == 2, "15s")
    consumer.shutdown()
    producer.shutdown()
    server.remote = remote
    yield server
    remote.close()
    server.stop()


def dlq(server, *argv: str) -> int:
    return main(["dlq", *argv, "--server", server.address])


def test_list_shows_each_dead_letter_and_json_says_the_same(dead, capsys):
    assert dlq(dead, "list", "billing") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["ID", "OFFSET", "ID", "TOPIC"] and len(lines) == 3
    assert all(" Orders " in line and "TagP" in line and line.endswith("dead") for line in lines[1:])
    # the message id first (what the producer and `message send` printed), its DLQ record's offsetMsgId second
    assert sorted(line.split()[0] for line in lines[1:]) == sorted(s.msg_id for s in dead.sent)
    assert dlq(dead, "list", "billing", "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert sorted(d["keys"] for d in doc) == ["order-0", "order-1"]
    assert sorted(d["msg_id"] for d in doc) == sorted(s.msg_id for s in dead.sent)
    assert [line.split()[1] for line in lines[1:]] == [d["offset_msg_id"] for d in doc]
    assert {(d["original_topic"], d["attempts"], d["broker"], d["redriven_as"]) for d in doc} == {
        ("Orders", 1, "broker-a", None)}
    assert [d.msg_id for d in dead.remote.dead_letters("billing")] == [d["msg_id"] for d in doc]
    assert dlq(dead, "list", "nobody") == 2          # a group no broker knows: a mistake, not an empty list
    assert "no group named 'nobody' on any broker" in capsys.readouterr().err


def test_redrive_sends_each_once(dead, capsys):
    assert dlq(dead, "list", "billing", "--json") == 0
    ids = [d["offset_msg_id"] for d in json.loads(capsys.readouterr().out)]
    assert dlq(dead, "redrive", "billing", "--all", "--dry-run") == 0
    out = capsys.readouterr().out
    assert out.count("would re-drive") == 2 and "2 to send" in out
    assert dlq(dead, "redrive", "billing", "--ids", ids[0]) == 0
    assert "1 sent, 0 re-driven before" in capsys.readouterr().out
    assert dlq(dead, "redrive", "billing", "--all") == 0
    assert "1 sent, 1 re-driven before" in capsys.readouterr().out
    result = dead.remote.redrive("billing")
    assert (result.sent, sorted(result.already)) == ((), sorted(ids))
    assert dlq(dead, "list", "billing") == 0
    assert capsys.readouterr().out.count("re-driven as") == 2


def test_redrive_takes_either_id_of_a_dead_letter(dead, capsys):
    """The message id `message send` and consumers print, or the offsetMsgId of its DLQ
    record, as `message show` takes either."""
    assert dlq(dead, "list", "billing", "--json") == 0
    by_key = {d["keys"]: d for d in json.loads(capsys.readouterr().out)}
    first, second = dead.sent
    assert dlq(dead, "redrive", "billing", "--ids", first.msg_id) == 0
    assert "1 sent, 0 re-driven before" in capsys.readouterr().out
    assert dlq(dead, "redrive", "billing", "--ids", by_key["order-1"]["offset_msg_id"].lower()) == 0
    assert "1 sent, 0 re-driven before" in capsys.readouterr().out
    assert dlq(dead, "redrive", "billing", "--ids", second.msg_id, by_key["order-0"]["offset_msg_id"]) == 0
    assert "0 sent, 2 re-driven before" in capsys.readouterr().out


def test_redrive_says_the_message_id_first_then_the_offset_ids(dead, capsys):
    """As `dlq list` does: the message id (what `message send` printed), the dead letter's
    offsetMsgId, and the offsetMsgId of the new message it became."""
    assert dlq(dead, "list", "billing", "--json") == 0
    letter = {d["keys"]: d for d in json.loads(capsys.readouterr().out)}["order-0"]
    msg_id, offset_id = dead.sent[0].msg_id, letter["offset_msg_id"]
    assert dlq(dead, "redrive", "billing", "--ids", msg_id, "--dry-run") == 0
    assert capsys.readouterr().out.splitlines()[0] == f"would re-drive {msg_id} (offset id {offset_id})"
    assert dlq(dead, "redrive", "billing", "--ids", msg_id) == 0
    said = capsys.readouterr().out.splitlines()[0]
    assert dlq(dead, "list", "billing", "--json") == 0
    new_id = {d["keys"]: d for d in json.loads(capsys.readouterr().out)}["order-0"]["redriven_as"]
    assert said == f"re-drove {msg_id} (offset id {offset_id}) as offset id {new_id}"
    assert dlq(dead, "redrive", "billing", "--ids", offset_id, "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["sent"], doc["already"]) == ([], [{"msg_id": msg_id, "id": offset_id}])
    assert dlq(dead, "redrive", "billing", "--ids", offset_id) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"skipped {msg_id} (offset id {offset_id}): re-driven before"
    assert dead.remote.redrive("billing", [msg_id]).msg_ids == {offset_id: msg_id}


@pytest.mark.parametrize("argv, message", [
    (["redrive", "nobody", "--all"], "no group named 'nobody' on any broker"),
    (["redrive", "billing", "--ids", "not-an-id"], "not a dead letter of billing"),
    (["redrive", "billing", "--ids", "7F00000100002A9F0000000000000000"], "not a dead letter of billing"),
    (["redrive", "billing"], "one of the arguments --ids --all is required"),
])
def test_bad_input_is_one_line_and_exit_2(dead, capsys, argv, message):
    assert dlq(dead, *argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    with pytest.raises(MQBrokerError, match="has no dead letters"):
        dead.remote.redrive("nobody")


def test_concurrent_redrives_send_each_dead_letter_once(dead):
    import threading

    results, errors = [], []

    def redrive():
        remote = RemoteBroker(dead.address)
        try:
            results.append(remote.redrive("billing"))
        except Exception as exc:        # (collected: the assertion below says what went wrong)
            errors.append(exc)
        finally:
            remote.close()
    threads = [threading.Thread(target=redrive) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == [] and len(results) == 4
    sent = [s for r in results for s in r.sent]
    assert len(sent) == 2 and len({d for d, _ in sent}) == 2          # each dead letter once, all told
    assert sorted(len(r.already) for r in results).count(2) >= 1
