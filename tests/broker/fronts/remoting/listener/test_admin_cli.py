"""`rocketmq-emulator topic create` (UPDATE_AND_CREATE_TOPIC, as mqadmin updateTopic) and
the one-line errors of the admin commands, against a real server in a thread."""
import json

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ, ResponseCode as RC

from tests.support.processes import free_port
from tests.support.remoting import RawClient


def route_of(port, topic):
    c = RawClient(port)
    try:
        return c.call(RemotingCommand.request(RQ.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
    finally:
        c.close()


def test_topic_create_makes_a_routable_topic(virtual_server, capsys):
    port = virtual_server.port
    assert route_of(port, "Orders").code == RC.TOPIC_NOT_EXIST
    assert main(["topic", "create", "Orders", "--queues", "3", "--server", f"127.0.0.1:{port}"]) == 0
    assert "topic Orders created: 3 queues" in capsys.readouterr().out
    route = route_of(port, "Orders")
    assert route.code == RC.SUCCESS
    (queues,) = json.loads(route.body)["queueDatas"]
    assert (queues["readQueueNums"], queues["writeQueueNums"], queues["perm"]) == (3, 3, 6)


def test_topic_create_refusals_are_one_line_and_change_nothing(virtual_server, capsys):
    server = f"127.0.0.1:{virtual_server.port}"
    assert main(["topic", "create", "bad topic!", "--server", server]) == 2      # refused input: a user mistake
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "bad topic!" in err
    assert route_of(virtual_server.port, "bad topic!").code == RC.TOPIC_NOT_EXIST
    assert main(["topic", "create", "T", "--queues", "0", "--server", server]) == 2
    assert capsys.readouterr().err == \
        "rocketmq-emulator topic create: error: argument --queues: must be from 1 to 1024, got 0\n"
    assert main(["topic", "create", "T", "--server", "no-port"]) == 2
    assert "HOST:PORT" in capsys.readouterr().err
    assert main(["topic", "create", "T", "--server", f"127.0.0.1:{free_port()}", "--timeout", "2"]) == 1
    assert "cannot reach" in capsys.readouterr().err


def test_topic_create_says_whether_it_created_updated_or_left_the_topic(virtual_server, capsys):
    """Create-or-update, as mqadmin updateTopic: run again, it says what it did to the
    topic that was there (issue 47: a README example turned 4 queues into 8 and said
    "created")."""
    server = f"127.0.0.1:{virtual_server.port}"

    def create(*args):
        assert main(["topic", "create", "Changing", *args, "--server", server]) == 0
        return capsys.readouterr().out.strip()

    assert create("--queues", "4") == "topic Changing created: 4 queues, perm 6"
    assert create("--queues", "8") == "topic Changing updated: 4 -> 8 queues, perm 6"
    assert create("--queues", "8") == "topic Changing unchanged: 8 queues, perm 6"
    assert create("--queues", "8", "--perm", "4") == "topic Changing updated: 8 queues, perm 6 -> 4"
    assert create("--queues", "8", "--perm", "4", "--message-type", "fifo") == \
        "topic Changing updated: 8 queues, perm 4, message type none -> FIFO"
    # --json says it too: what it was and what it is
    doc = json.loads(create("--queues", "2", "--perm", "4", "--json"))
    assert doc == {"topic": "Changing", "outcome": "updated",
                   "brokers": {"broker-a": {"outcome": "updated",
                                            "before": {"read_queues": 8, "write_queues": 8, "perm": 4,
                                                       "order": False, "message_type": "FIFO"},
                                            "after": {"read_queues": 2, "write_queues": 2, "perm": 4,
                                                      "order": False, "message_type": "FIFO"}}}}
    doc = json.loads(create("--queues", "2", "--perm", "4", "--json"))
    assert doc["outcome"] == "unchanged"
    assert json.loads(create("--queues", "3", "--json"))["brokers"]["broker-a"]["before"]["read_queues"] == 2
    fresh = json.loads(main(["topic", "create", "Fresh", "--json", "--server", server]) == 0
                       and capsys.readouterr().out)
    assert fresh == {"topic": "Fresh", "outcome": "created",
                     "brokers": {"broker-a": {"outcome": "created", "before": None,
                                              "after": {"read_queues": 8, "write_queues": 8, "perm": 6,
                                                        "order": False, "message_type": None}}}}


def test_a_pulsar_topic_made_again_is_said_unchanged(virtual_server, capsys):
    server = f"127.0.0.1:{virtual_server.port}"
    for said in ("created", "unchanged"):
        assert main(["topic", "create", "persistent://public/default/made-twice", "--pulsar", "--partitions", "2",
                     "--server", server]) == 0
        assert capsys.readouterr().out.startswith(f"Pulsar topic persistent://public/default/made-twice {said}: "
                                                  f"2 partitions, stored as ")
