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
