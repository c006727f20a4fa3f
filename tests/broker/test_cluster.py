"""broker/cluster.py: brokers behind one name server on one clock, sans-I/O."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.broker.cluster import Cluster, ClusterError, broker_names
from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.protocol import EMULATOR_BROKER_CONTROL, EMULATOR_CLOCK_ADVANCE, RemotingCommand
from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode as RQ, ResponseCode as RC
from rocketmq_emulator.delay_scheduler import VirtualClock

from .wire import WireClient
from tests.support.remoting import front_of


@pytest.fixture
def cluster():
    clock = VirtualClock()
    cores = [BrokerCore.in_memory(clock, BrokerConfig(broker_name=name, listen_port=10911 + i))
             for i, name in enumerate(broker_names(2))]
    c = Cluster(cores)
    yield c
    for core in cores:
        core.close()


def route(core, topic):
    reply = front_of(core).handle(RemotingCommand.request(RQ.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}), core.connect())
    return reply.code, json.loads(reply.body) if reply.body else None


def test_every_member_answers_routes_for_the_whole_cluster(cluster):
    a, b = (cluster.core(n) for n in ("broker-a", "broker-b"))
    a.create_topic("Orders", 2)
    b.create_topic("Orders", 4)
    for member in (a, b):
        code, body = route(member, "Orders")
        assert code == RC.SUCCESS
        assert [(q["brokerName"], q["writeQueueNums"], q["perm"]) for q in body["queueDatas"]] == [
            ("broker-a", 2, 6), ("broker-b", 4, 6)]
        assert {d["brokerName"]: d["brokerAddrs"]["0"] for d in body["brokerDatas"]} == {
            "broker-a": "127.0.0.1:10911", "broker-b": "127.0.0.1:10912"}
    b.create_topic("OnlyB", 1)
    assert [q["brokerName"] for q in route(a, "OnlyB")[1]["queueDatas"]] == ["broker-b"]
    assert route(a, "Nowhere")[0] == RC.TOPIC_NOT_EXIST


def test_write_off_makes_the_brokers_queues_read_only_in_routes_and_refuses_sends(cluster):
    a = cluster.core("broker-a")
    a.create_topic("Orders", 1)
    cluster.set_write("broker-a", False)
    assert route(a, "Orders")[1]["queueDatas"][0]["perm"] == 4
    reply = WireClient(a).send("Orders")
    assert reply.code == RC.NO_PERMISSION
    cluster.set_write("broker-a", True)
    assert WireClient(a).send("Orders").code == RC.SUCCESS


def test_a_stopped_broker_leaves_the_routes_answers_only_name_server_requests_and_catches_up(cluster):
    a, b = cluster.core("broker-a"), cluster.core("broker-b")
    for core in (a, b):
        core.create_topic("Orders", 1)
    w = WireClient(b)
    assert w.send("Orders", b"later", delay=3).code == RC.SUCCESS        # due in 10 s
    cluster.stop("broker-b")
    assert [q["brokerName"] for q in route(a, "Orders")[1]["queueDatas"]] == ["broker-a"]
    assert route(b, "Orders")[0] == RC.SUCCESS                          # its port is still a name server's
    refused = w.send("Orders")
    assert refused.code == RC.SYSTEM_ERROR and "broker-b is stopped" in refused.remark
    cluster.advance_clock(60_000)
    assert b.store.max_offset("Orders", 0) == 0                         # down: nothing came due
    cluster.start("broker-b")
    assert b.store.max_offset("Orders", 0) == 1                         # due while down: delivered at start
    assert w.send("Orders").code == RC.SUCCESS


def test_the_clock_advance_ticks_every_broker_in_time_order(cluster):
    a, b = cluster.core("broker-a"), cluster.core("broker-b")
    for core in (a, b):
        core.create_topic("T", 1)
    assert WireClient(a).send("T", delay=3).code == RC.SUCCESS          # 10 s
    assert WireClient(b).send("T", delay=4).code == RC.SUCCESS          # 30 s
    reply = front_of(b).handle(RemotingCommand.request(EMULATOR_CLOCK_ADVANCE, {"millis": 20_000}), b.connect())
    assert reply.code == RC.SUCCESS
    assert (a.store.max_offset("T", 0), b.store.max_offset("T", 0)) == (1, 0)
    cluster.advance_clock(10_000)
    assert b.store.max_offset("T", 0) == 1
    cluster._check()


def test_refusals_name_the_mistake(cluster):
    a = cluster.core("broker-a")
    a.create_topic("OnlyA", 1)
    with pytest.raises(ClusterError, match="no broker named 'broker-z'; the brokers are broker-a, broker-b"):
        cluster.stop("broker-z")
    with pytest.raises(ClusterError, match="last broker up serving topic OnlyA"):
        cluster.stop("broker-a")
    cluster.stop("broker-b")
    with pytest.raises(ClusterError, match="already stopped"):
        cluster.stop("broker-b")
    with pytest.raises(ClusterError, match="already running"):
        cluster.start("broker-a")
    with pytest.raises(ClusterError, match="1 to 26 brokers"):
        broker_names(0)
    with pytest.raises(ClusterError, match="share one clock"):
        Cluster([BrokerCore.in_memory(VirtualClock()), BrokerCore.in_memory(
            VirtualClock(), BrokerConfig(broker_name="broker-b"))])


def test_the_control_request_lists_switches_and_refuses(cluster):
    a = cluster.core("broker-a")

    def control(**fields):
        return front_of(a).handle(RemotingCommand.request(EMULATOR_BROKER_CONTROL, fields), a.connect())
    assert control(action="write", brokerName="broker-b", value="off").code == RC.SUCCESS
    listed = json.loads(control(action="list").body)
    assert [(b["brokerName"], b["up"], b["brokerPermission"]) for b in listed] == [
        ("broker-a", True, 6), ("broker-b", True, 4)]
    bad = control(action="write", brokerName="broker-b", value="maybe")
    assert bad.code == RC.SYSTEM_ERROR and "on or off" in bad.remark
    assert "no broker named" in control(action="stop", brokerName="nope").remark


def test_update_broker_config_sets_the_permission_as_mqadmin_does(core):
    def update(body: bytes):
        return front_of(core).handle(RemotingCommand.request(RQ.UPDATE_BROKER_CONFIG, {}, body), core.connect())
    assert update(b"brokerPermission=4\n").code == RC.SUCCESS
    assert not core.writeable and core.readable
    refused = update(b"flushDiskType=SYNC_FLUSH\n")
    assert refused.code != RC.SUCCESS and "only brokerPermission" in refused.remark
    assert update(b"brokerPermission=6").code == RC.SUCCESS and core.writeable
