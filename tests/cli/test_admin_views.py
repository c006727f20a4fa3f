"""The reads mqadmin does, over its request codes (206, 202, 208, 201, 215/216), and the
CLI verbs on them: topic list|show|delete, group list|show - against a running `serve`
(two brokers, so every view spans the cluster)."""
from __future__ import annotations

import json
import re

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ, ResponseCode as RC
from rocketmq_emulator.broker.fronts.remoting.protocol.fastjson import loads_fastjson
from rocketmq_emulator.client_sdk import (CONSUME_SUCCESS, RECONSUME_LATER, Message, MessageQueue, Producer,
                                         PushConsumer, RemoteBroker)
from tests.support.processes import EmulatorProcess
from tests.support.remoting import RawClient


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """serve --brokers 2: Orders (2 queues on each broker) with 6 messages, 5 consumed by
    `billing` and one poison message in its DLQ (maxReconsumeTimes 0)."""
    server = EmulatorProcess(tmp_path_factory.mktemp("views") / "store", "--clock", "virtual", brokers=2).start()
    remote = RemoteBroker(server.address)
    assert main(["topic", "create", "Orders", "--queues", "2", "--server", server.address]) == 0
    producer = Producer("pg", remote).start()
    for i in range(5):
        producer.send(Message("Orders", b"ok-%d" % i))
    producer.send(Message("Orders", b"poison"), MessageQueue("Orders", "broker-b", 1))
    done = []
    consumer = PushConsumer("billing", remote, max_reconsume_times=0, persist_consumer_offset_interval=100)
    consumer.subscribe("Orders", "*")
    consumer.register_message_listener(lambda msgs, ctx: done.extend(msgs) or (
        RECONSUME_LATER if msgs[0].body == b"poison" else CONSUME_SUCCESS))
    consumer.start()
    assert remote.run_until(lambda: len(done) == 6 and consumer.stats.send_back_ok == 1, "15s")
    consumer.persist_offsets()
    remote.run_for("300ms")
    consumer.shutdown()
    producer.shutdown()
    remote.close()
    yield server
    server.stop()


def cli(server, *argv):
    return main([*argv, "--server", server.address])


def test_the_name_server_lists_every_topic_as_mqadmin_topiclist_reads_it(loaded, capsys):
    reply = RawClient(loaded.port).call(RemotingCommand.request(RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}))
    assert reply.code == RC.SUCCESS and {"Orders", "%DLQ%billing", "%RETRY%billing"} <= set(
        json.loads(reply.body)["topicList"])
    assert cli(loaded, "topic", "list") == 0
    assert "Orders" in capsys.readouterr().out.split()


def test_topic_stats_are_fastjson_maps_keyed_by_message_queue(loaded, capsys):
    b_port = loaded.broker_ports["broker-b"]
    reply = RawClient(b_port).call(RemotingCommand.request(RQ.GET_TOPIC_STATS_INFO, {"topic": "Orders"}))
    assert reply.code == RC.SUCCESS and reply.body.startswith(b'{"offsetTable":{{"brokerName":"broker-b"')
    table = loads_fastjson(reply.body)["offsetTable"]
    assert sorted(json.loads(k)["queueId"] for k in table) == [0, 1]
    assert cli(loaded, "topic", "show", "Orders", "--json") == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["broker"], r["queue_id"]) for r in rows] == [("broker-a", 0), ("broker-a", 1), ("broker-b", 0),
                                                            ("broker-b", 1)]
    assert sum(r["max_offset"] for r in rows) == 6 and all(r["last_update_timestamp"] > 0 for r in rows if r["max_offset"])
    missing = RawClient(b_port).call(RemotingCommand.request(RQ.GET_TOPIC_STATS_INFO, {"topic": "Nope"}))
    assert missing.code == RC.TOPIC_NOT_EXIST
    assert cli(loaded, "topic", "show", "Nope") == 2
    assert "no topic named 'Nope' on any broker" in capsys.readouterr().err


def test_group_show_is_consumer_progress_with_retries_and_dead_letters(loaded, capsys):
    assert cli(loaded, "group", "show", "billing", "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["lag"] == 0 and doc["dead_letters"] == 1
    assert sum(q["consumer_offset"] for q in doc["queues"]) == 6
    assert {(q["broker"], q["queue_id"]) for q in doc["queues"]} == {(b, q) for b in ("broker-a", "broker-b")
                                                                     for q in (0, 1)}
    assert cli(loaded, "group", "show", "billing") == 0
    out = capsys.readouterr().out
    assert "BROKER OFFSET" in out and "dead letters: 1" in out
    assert cli(loaded, "group", "list") == 0
    assert "billing" in capsys.readouterr().out.split()
    assert cli(loaded, "group", "show", "nobody") == 2
    assert "no group named 'nobody' on any broker" in capsys.readouterr().err


def test_topic_delete_takes_it_off_every_broker(loaded, capsys):
    assert cli(loaded, "topic", "create", "Scratch", "--queues", "1") == 0
    capsys.readouterr()
    assert cli(loaded, "topic", "delete", "Scratch") == 0
    assert capsys.readouterr().out.strip() == "topic Scratch deleted on broker-a, broker-b"
    assert cli(loaded, "topic", "list") == 0
    assert "Scratch" not in capsys.readouterr().out.split()
    assert cli(loaded, "topic", "delete", "Scratch") == 2
    assert cli(loaded, "topic", "delete", "SCHEDULE_TOPIC_XXXX") == 2
    assert "system topic" in capsys.readouterr().err


def test_message_send_show_and_find(loaded, capsys):
    assert cli(loaded, "message", "send", "Orders", "hello ünïcode", "--tag", "TagA", "--key", "order-42",
               "--json") == 0
    sent = json.loads(capsys.readouterr().out)
    assert sent["status"] == "SEND_OK" and sent["broker"] in ("broker-a", "broker-b")
    assert cli(loaded, "message", "show", sent["offset_msg_id"], "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["body"], shown["tags"], shown["keys"], shown["topic"], shown["queue_id"]) == (
        "hello ünïcode", "TagA", "order-42", "Orders", sent["queue_id"])
    assert shown["msg_id"] == sent["msg_id"]
    assert cli(loaded, "message", "find", "--topic", "Orders", "--key", "order-42") == 0
    line = capsys.readouterr().out
    assert line.startswith(sent["msg_id"]) and sent["offset_msg_id"] in line      # both ids
    assert cli(loaded, "message", "find", "--topic", "Orders", "--key", "no-such-key") == 0
    assert "no message of Orders has key no-such-key" in capsys.readouterr().out
    assert cli(loaded, "message", "show", "zz") == 2
    assert "no message has id zz" in capsys.readouterr().err
    assert cli(loaded, "message", "send", "NoSuchTopic", "x") == 2
    assert "No topic route info" in capsys.readouterr().err


def test_message_show_takes_the_message_id_every_other_command_prints(loaded, capsys):
    """`message send --json`, `message find`, the SDK's SendResult.msg_id and the dashboard
    give the message id (UNIQ_KEY). `message show` takes it as mqadmin queryMsgById does:
    an id that is no offsetMsgId of a broker here is looked up by unique key (QUERY_MESSAGE
    on every broker) - and the output shows both ids."""
    remote = RemoteBroker(loaded.address)
    producer = Producer("pg-ids", remote).start()
    try:
        result = producer.send(Message("Orders", b"by message id", keys="k-ids"), MessageQueue("Orders", "broker-b", 0))
    finally:
        producer.shutdown()
        remote.close()
    assert result.msg_id != result.offset_msg_id
    assert cli(loaded, "message", "show", result.msg_id, "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["msg_id"], shown["offset_msg_id"], shown["body"]) == (
        result.msg_id, result.offset_msg_id, "by message id")
    assert cli(loaded, "message", "show", result.msg_id) == 0
    out = capsys.readouterr().out
    assert result.msg_id in out and result.offset_msg_id in out
    assert cli(loaded, "message", "show", result.offset_msg_id, "--json") == 0     # the offset id still works
    assert json.loads(capsys.readouterr().out)["msg_id"] == result.msg_id


def test_message_show_of_a_retried_message_shows_the_original_and_its_copies(loaded, capsys):
    """The poison message of `billing` was sent back and dead-lettered: its message id
    names the original in Orders, and the copies in %RETRY%/%DLQ% are listed with theirs."""
    assert cli(loaded, "dlq", "list", "billing", "--json") == 0
    [dead] = json.loads(capsys.readouterr().out)
    assert cli(loaded, "message", "show", dead["msg_id"], "--json") == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["topic"], shown["body"], shown["reconsume_times"]) == ("Orders", "poison", 0)
    assert dead["offset_msg_id"] in [c["offset_msg_id"] for c in shown["copies"]]
    assert "%DLQ%billing" in [c["topic"] for c in shown["copies"]]


def test_message_show_of_an_id_nobody_has_is_one_line_and_exit_2(loaded):
    from tests.support.cli_run import one_error_line, run_cli

    unknown = "7F0000010000" + "0" * 20
    done = run_cli("message", "show", unknown, "--server", loaded.address)
    assert done.returncode == 2 and done.stdout == ""
    assert f"no message has id {unknown}" in one_error_line(done.stderr, "message show")


def test_status_shows_each_brokers_runtime_figures(loaded, capsys):
    reply = RawClient(loaded.port).call(RemotingCommand.request(RQ.GET_BROKER_RUNTIME_INFO, {}))
    table = json.loads(reply.body)["table"]
    assert table["brokerName"] == "broker-a" and table["clock"] == "virtual" and int(table["commitLogMaxOffset"]) > 0
    assert cli(loaded, "status", "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert sorted(doc) == ["broker-a", "broker-b"] and doc["broker-b"]["stopped"] is False


def test_connections_and_group_delete_over_their_request_codes(loaded):
    from rocketmq_emulator.client_sdk import Producer, PushConsumer

    client = RawClient(loaded.port)
    offline = client.call(RemotingCommand.request(RQ.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "billing"}))
    assert offline.code == RC.CONSUMER_NOT_ONLINE and "not online" in offline.remark
    remote = RemoteBroker(loaded.address)
    consumer = PushConsumer("watcher", remote)
    consumer.subscribe("Orders", "TagA || TagB")
    consumer.register_message_listener(lambda msgs, ctx: CONSUME_SUCCESS)
    consumer.start()
    producer = Producer("pg-live", remote).start()
    try:
        conns = remote.consumer_connections("watcher")
        assert conns["subscriptions"]["Orders"]["subString"] == "TagA || TagB"
        assert conns["connections"][0]["clientId"] == consumer.instance.client_id
        reply = client.call(RemotingCommand.request(RQ.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "pg-live"}))
        assert reply.code == RC.SUCCESS and len(json.loads(reply.body)["connectionSet"]) == 1
    finally:
        consumer.shutdown()
        producer.shutdown()
        remote.close()
    assert main(["group", "create", "scratch-group", "--server", loaded.address]) == 0
    gone = client.call(RemotingCommand.request(RQ.DELETE_SUBSCRIPTIONGROUP, {"groupName": "scratch-group"}))
    assert gone.code == RC.SUCCESS
    again = client.call(RemotingCommand.request(RQ.DELETE_SUBSCRIPTIONGROUP, {"groupName": "scratch-group"}))
    assert again.code == RC.SUBSCRIPTION_GROUP_NOT_EXIST


# Maps whose keys are data, not field names: a message's properties (the user's own keys and
# RocketMQ's), and `status`'s runtime table per broker (mqadmin brokerStatus's names, as the
# readable output prints them).
_DATA_MAPS = {"properties"}
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")


def _field_names(doc, into: set) -> set:
    if isinstance(doc, dict):
        for k, v in doc.items():
            into.add(k)
            if k not in _DATA_MAPS:
                _field_names(v, into)
    elif isinstance(doc, list):
        for v in doc:
            _field_names(v, into)
    return into


def test_every_json_document_of_the_cli_names_its_fields_in_snake_case(loaded, capsys):
    """One naming style for every --json document: snake_case, as most already were
    (msg_id, now_ms, dead_letters) - group show mixed queue_id with brokerOffset."""
    def doc(*argv):
        assert cli(loaded, *argv, "--json") == 0, argv
        return json.loads(capsys.readouterr().out)

    sent = doc("message", "send", "Orders", "naming", "--key", "naming-1")
    rule = doc("fault", "add", "send", "delay", "--topic", "Nowhere", "--delay", "1s", "--times", "1")
    documents = {
        "message send": sent, "message show": doc("message", "show", sent["msg_id"]),
        "message find": doc("message", "find", "--topic", "Orders", "--key", "naming-1"),
        "topic list": doc("topic", "list"), "topic show": doc("topic", "show", "Orders"),
        "group list": doc("group", "list"), "group show": doc("group", "show", "billing"),
        "broker list": doc("broker", "list"), "clock now": doc("clock", "now"),
        "clock advance": doc("clock", "advance", "1s"),
        "dlq list": doc("dlq", "list", "billing"), "dlq redrive": doc("dlq", "redrive", "billing", "--all", "--dry-run"),
        "fault add": rule, "fault list": doc("fault", "list"), "fault remove": doc("fault", "remove", str(rule["id"])),
        "fault clear": doc("fault", "clear"), "offset reset": doc("offset", "reset", "billing", "Orders", "--to", "latest"),
    }
    status = doc("status")
    assert set(status) == {"broker-a", "broker-b"}      # keyed by broker; each a brokerStatus table (data)
    for command, document in documents.items():
        names = _field_names(document, set())
        assert [n for n in sorted(names) if not _SNAKE.match(n)] == [], command
    group = documents["group show"]["queues"][0]
    assert {"queue_id", "broker_offset", "consumer_offset", "lag"} <= set(group)
    assert {"min_offset", "max_offset", "last_update_timestamp", "half_messages"} <= set(documents["topic show"][0])
    assert {"broker", "broker_permission", "up"} <= set(documents["broker list"][0])


def test_message_show_says_which_clock_born_and_stored_are_on(loaded, capsys):
    """The CLI stamps born time with its wall clock (as a real client does), the server's
    clock is virtual (2024): both printed, each saying whose clock it is."""
    assert cli(loaded, "message", "send", "Orders", "two clocks", "--json") == 0
    sent = json.loads(capsys.readouterr().out)
    assert cli(loaded, "message", "show", sent["msg_id"]) == 0
    out = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert out["born"].endswith("(the producer's clock)") and not out["born"].split()[1].startswith("2024")
    assert out["stored"].endswith("(the broker's clock)") and out["stored"].split()[1].startswith("2024-01-01")
