"""`serve` advertises brokerIP1 from broker.conf in its routes and in every offsetMsgId,
as a RocketMQ broker does, while it binds --host (upstream: BrokerConfig.brokerIP1; the
choice for a wildcard bind is advertise.advertised_ip, tested on its own)."""
import json

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ
from tests.support.processes import EmulatorProcess
from tests.support.remoting import RawClient


def route_of(port: int, topic: str) -> dict:
    client = RawClient(port)
    try:
        reply = client.call(RemotingCommand.request(RQ.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
        assert reply.code == 0, reply.remark
        return json.loads(reply.body)
    finally:
        client.close()


def test_routes_advertise_broker_ip1_from_broker_conf(tmp_path):
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerIP1=127.0.0.2\n")
    server = EmulatorProcess(tmp_path / "store", "--host", "127.0.0.1", "--config", str(conf)).start()
    try:
        route = route_of(server.port, "TBW102")
        assert route["brokerDatas"][0]["brokerAddrs"] == {"0": f"127.0.0.2:{server.port}"}
    finally:
        server.stop()


def test_without_broker_ip1_routes_advertise_the_bind_address(tmp_path):
    server = EmulatorProcess(tmp_path / "store").start()
    try:
        route = route_of(server.port, "TBW102")
        assert route["brokerDatas"][0]["brokerAddrs"] == {"0": f"127.0.0.1:{server.port}"}
    finally:
        server.stop()
