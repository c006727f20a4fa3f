"""A Pulsar topic on the command line by its Pulsar name (issue 47, item 6): `topic list`,
`topic show`, `message show`, `message find` and `group show` print
`persistent://public/default/payments`, never the store's `pulsar|public|default|payments`
(in the tables and in --json); every command that takes a topic takes the Pulsar name
too (the full one, or the short one a Pulsar client takes when no RocketMQ topic has
that name), the store's name still works, and a mistyped Pulsar name gets the closest
Pulsar name. No pulsar-client needed: a 4.x producer sends to the Pulsar topic."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk import Message, Producer, RemoteBroker
from tests.support.cli_run import one_error_line, run_cli
from tests.support.processes import EmulatorProcess

FULL = "persistent://public/default/payments"
STORED = "pulsar|public|default|payments"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = EmulatorProcess(tmp_path_factory.mktemp("pulsar-names") / "store", "--clock", "virtual").start()
    for argv in (["topic", "create", FULL, "--pulsar"], ["topic", "create", "Orders", "--queues", "1"],
                 ["group", "create", "ledger"]):
        assert main([*argv, "--server", s.address]) == 0
    remote = RemoteBroker(s.address)
    producer = Producer("pg", remote).start()
    s.sent = producer.send(Message(STORED, b"pay 7", keys="order-7"))
    producer.shutdown()
    remote.close()
    yield s
    s.stop()


def cli(server, capsys, *argv: str) -> str:
    code = main([*argv, "--server", server.address])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_topic_list_names_a_pulsar_topic_by_its_pulsar_name(server, capsys):
    listed = cli(server, capsys, "topic", "list").splitlines()
    assert FULL in listed and "Orders" in listed and not any("pulsar|" in t for t in listed)
    assert FULL in json.loads(cli(server, capsys, "topic", "list", "--json"))


@pytest.mark.parametrize("name", [FULL, "payments", "public/default/payments", STORED])
def test_topic_show_takes_the_pulsar_name_in_each_form_and_the_stores(server, capsys, name):
    [row] = json.loads(cli(server, capsys, "topic", "show", name, "--json"))
    assert (row["topic"], row["max_offset"]) == (FULL, 1)


def test_message_find_takes_and_prints_the_pulsar_name(server, capsys):
    out = cli(server, capsys, "message", "find", "--topic", FULL, "--key", "order-7")
    assert f" {FULL}/0@0 " in out and "pulsar|" not in out
    [view] = json.loads(cli(server, capsys, "message", "find", "--topic", "payments", "--key", "order-7", "--json"))
    assert (view["msg_id"], view["topic"]) == (server.sent.msg_id, FULL)


@pytest.mark.parametrize("ident", ["msg_id", "offset_msg_id"])
def test_message_show_prints_the_pulsar_name(server, capsys, ident):
    out = cli(server, capsys, "message", "show", getattr(server.sent, ident))
    assert f"topic            {FULL}\n" in out and "pulsar|" not in out.replace(STORED, "")
    doc = json.loads(cli(server, capsys, "message", "show", server.sent.msg_id, "--topic", FULL, "--json"))
    assert doc["topic"] == FULL


def test_offset_reset_and_group_show_take_the_pulsar_name(server, capsys):
    out = cli(server, capsys, "offset", "reset", "ledger", FULL, "--to", "latest")
    assert "queue 0: offset 1" in out
    doc = json.loads(cli(server, capsys, "group", "show", "ledger", "--topic", "payments", "--json"))
    assert [(q["topic"], q["consumer_offset"]) for q in doc["queues"]] == [(FULL, 1)]


def test_message_send_takes_the_pulsar_name(server, capsys):
    out = cli(server, capsys, "message", "send", FULL, "pay 8", "--key", "order-8")
    assert f"to {FULL} (" in out
    [view] = json.loads(cli(server, capsys, "message", "find", "--topic", FULL, "--key", "order-8", "--json"))
    assert (view["topic"], view["queue_offset"], view["body"]) == (FULL, 1, "pay 8")


def test_topic_delete_takes_and_says_the_pulsar_name(server, capsys):
    cli(server, capsys, "topic", "create", "scratch", "--pulsar")
    assert cli(server, capsys, "topic", "delete", "persistent://public/default/scratch") == \
        "topic persistent://public/default/scratch deleted on broker-a\n"
    assert "persistent://public/default/scratch" not in cli(server, capsys, "topic", "list")


def test_a_rocketmq_topic_of_the_short_name_is_the_one_named(server, capsys):
    """`Orders` is a RocketMQ topic: the short name is the Pulsar one only where no
    RocketMQ topic has it (a RocketMQ user's names mean what they meant)."""
    cli(server, capsys, "topic", "create", "Orders", "--pulsar")
    [row] = json.loads(cli(server, capsys, "topic", "show", "Orders", "--json"))
    assert (row["topic"], row["max_offset"]) == ("Orders", 0)
    [row] = json.loads(cli(server, capsys, "topic", "show", "persistent://public/default/Orders", "--json"))
    assert row["topic"] == "persistent://public/default/Orders"


def test_a_mistyped_pulsar_name_gets_the_closest_pulsar_name(server):
    done = run_cli("topic", "show", "persistent://public/default/paymnts", "--server", server.address)
    assert done.returncode == 2 and done.stdout == ""
    line = one_error_line(done.stderr, "topic show")
    assert f"did you mean {FULL!r}?" in line and "pulsar|" not in line, line
