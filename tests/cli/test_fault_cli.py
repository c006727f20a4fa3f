"""`rocketmq-emulator fault` against `serve` (issue 38): a rule added from the command line
makes the broker refuse a real client's send over TCP; list, remove and clear; bad rules
refused in one line with exit 2."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.client_sdk import Message, Producer, RemoteBroker
from rocketmq_emulator.client_sdk.errors import MQBrokerError
from rocketmq_emulator.client_sdk.faults import FaultError
from tests.support.cli_run import one_error_line, run_cli
from tests.support.processes import EmulatorProcess


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    proc = EmulatorProcess(tmp_path_factory.mktemp("fault-cli") / "store", "--clock", "virtual").start()
    assert run_cli("topic", "create", "Orders", "--queues", "1", "--server", proc.address).returncode == 0
    yield proc
    proc.stop()


def fault(server, *args):
    return run_cli("fault", *args, "--server", server.address)


def test_a_rule_from_the_command_line_refuses_a_send_over_tcp_once(server):
    added = fault(server, "add", "send", "refuse", "--topic", "Orders", "--times", "1")
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == "rule 1: refuse send (topic Orders), 1 more time(s)"
    remote = RemoteBroker(server.address)
    producer = Producer("pg", remote).start()
    remote.run_in_background()
    try:
        sent = remote.call(lambda: producer.send(Message("Orders", b"through")))    # refused once, then retried
    finally:
        remote.call(producer.shutdown)
        remote.close()
    assert sent.msg_id
    listed = fault(server, "list", "--json")
    [spent] = json.loads(listed.stdout)                     # used up: listed as spent, with what it did
    assert (spent["state"], spent["matched"], spent["hits"], spent["left"]) == ("spent", 1, 1, 0)
    text = fault(server, "list").stdout.strip()
    assert text == ("rule 1 on broker-a: refuse send (topic Orders), its 1 time(s) used up; matched 1, fired 1; "
                    "spent")
    assert fault(server, "remove", "1").stdout.strip() == "rule 1 removed"
    assert json.loads(fault(server, "list", "--json").stdout) == []


def test_list_remove_and_clear(server):
    assert fault(server, "add", "pull", "delay", "--delay", "5s", "--group", "billing").returncode == 0
    assert fault(server, "add", "ack", "drop").returncode == 0
    rules = json.loads(fault(server, "list", "--json").stdout)
    assert [(r["operation"], r["action"], r["delay_ms"], r["group"]) for r in rules] == [
        ("pull", "delay", 5000, "billing"), ("ack", "drop", 0, None)]
    text = fault(server, "list").stdout
    assert "delay pull by 5000 ms (group billing); matched 0, fired 0; active" in text
    first = rules[0]["id"]
    assert fault(server, "remove", str(first)).stdout.strip() == f"rule {first} removed"
    again = fault(server, "remove", str(first))
    assert again.returncode == 0 and again.stdout.strip() == f"rule {first} was already gone"
    assert fault(server, "clear").stdout.strip() == "1 rule(s) removed"
    assert json.loads(fault(server, "list", "--json").stdout) == []


@pytest.mark.parametrize("args, says", [
    (("add", "send", "refuse", "--probability", "1.5"), "probability: a number from 0 to 1"),
    (("add", "send", "delay", "--delay", "soon"), "delay:"),
    (("add", "send", "delay", "--delay", "-5s"), "delay:"),
    (("add", "send", "refuse", "--broker", "broker-z"), "broker: no broker named 'broker-z'"),
    (("add", "heartbeat", "duplicate"), "action: duplicate does not apply to heartbeat"),
    (("add", "send", "explode"), "invalid choice: 'explode'"),
    (("add", "send", "delay", "--delay", "99999999999d"), "delay: at most 1d"),
    (("add", "send", "refuse", "--topic", "T\x1b[31m\nrule 9 on broker-a: forged"), "topic: "),
    (("add", "send", "refuse", "--group", "g" * 10_000), "group: "),
    (("add", "send", "refuse", "--client", "c\u202eevil"), "client: "),
])
def test_a_bad_rule_is_one_line_and_exit_2(server, args, says):
    done = fault(server, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    line = one_error_line(done.stderr, "fault add")
    assert says in line and len(line) < 600 and not any(c in line for c in "\x1b\u202e")
    assert json.loads(fault(server, "list", "--json").stdout) == []


def test_remote_broker_faults_over_the_wire(server):
    """RemoteBroker.faults: the same API as EmbeddedBroker.faults against a `serve`."""
    remote = RemoteBroker(server.address)
    producer = Producer("pg", remote).start()
    remote.run_in_background()
    try:
        with remote.faults.add("send", "refuse", topic="Orders", error="SYSTEM_BUSY") as rule:
            assert [(r["operation"], r["action"], r["error"]) for r in remote.faults.list()] == [
                ("send", "refuse", "SYSTEM_BUSY")]
            with pytest.raises(MQBrokerError) as refused:
                remote.call(lambda: producer.send(Message("Orders", b"refused")))
            assert refused.value.code_name == "SYSTEM_BUSY"
            assert rule.hits >= 1
        assert remote.faults.list() == []                                   # the with-block removed it
        assert remote.faults.remove(rule.id) is False                       # gone: not an error
        assert remote.call(lambda: producer.send(Message("Orders", b"through"))).msg_id
        with pytest.raises(FaultError, match="probability: a number from 0 to 1"):
            remote.faults.add("send", "refuse", probability=2)
        with pytest.raises(FaultError, match="action: duplicate does not apply to heartbeat"):
            remote.faults.add("heartbeat", "duplicate")
        remote.faults.add("ack", "drop")
        assert remote.faults.clear() == 1
    finally:
        remote.call(producer.shutdown)
        remote.close()


def test_the_readme_fault_commands_run_as_written(server):
    import pathlib
    import shlex

    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Guide: testing your failure handling", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(line.split("#")[0]) for line in section.splitlines()
                if line.startswith("    rocketmq-emulator fault ")]
    assert len(commands) == 7
    for argv in commands:
        done = run_cli(*argv[1:], "--server", server.address)
        assert done.returncode == 0, (argv, done.stderr)
    assert json.loads(fault(server, "list", "--json").stdout) == []          # the last one cleared them
