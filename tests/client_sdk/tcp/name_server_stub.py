"""A name server apart from its brokers, as in a real RocketMQ cluster: it answers only
GET_ROUTEINFO_BY_TOPIC and GET_BROKER_CLUSTER_INFO (merging what the `serve` processes
behind it report, written in fastjson's dialect with bare map keys, as the Java name
server writes them) and refuses every broker request with REQUEST_CODE_NOT_SUPPORTED.
So a client gets anything done only by following the routes' brokerAddrs."""
from __future__ import annotations

import json
import socket
import threading

from rocketmq_emulator.broker.fronts.remoting.protocol import FrameDecoder, RemotingCommand, RequestCode, ResponseCode, encode
from tests.support.remoting import RawClient


class NameServerStub:
    def __init__(self, brokers: list[int]):
        self.broker_ports = brokers
        self.codes: list[int] = []                     # every request code received
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self._conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        decoder = FrameDecoder()
        try:
            while data := conn.recv(65536):
                for cmd in decoder.feed(data):
                    self.codes.append(cmd.code)
                    reply = self._answer(cmd)
                    if not cmd.is_oneway:
                        conn.sendall(encode(reply))
        except OSError:
            pass

    def _ask_brokers(self, cmd: RemotingCommand) -> list[dict]:
        answers = []
        for port in self.broker_ports:
            client = RawClient(port)
            try:
                reply = client.call(RemotingCommand.request(cmd.code, cmd.ext_fields))
            finally:
                client.close()
            if reply.code == ResponseCode.SUCCESS:
                answers.append(json.loads(reply.body))
        return answers

    def _answer(self, cmd: RemotingCommand) -> RemotingCommand:
        if cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            routes = self._ask_brokers(cmd)
            if not routes:
                return cmd.response(ResponseCode.TOPIC_NOT_EXIST, f"No topic route info in name server for "
                                                                  f"the topic: {cmd.header('topic')}")
            merged = {"brokerDatas": [bd for r in routes for bd in r["brokerDatas"]], "filterServerTable": {},
                      "queueDatas": [qd for r in routes for qd in r["queueDatas"]]}
            return cmd.response(ResponseCode.SUCCESS, body=fastjson_dialect(merged))
        if cmd.code == RequestCode.GET_BROKER_CLUSTER_INFO:
            infos = self._ask_brokers(cmd)
            table = {name: bd for info in infos for name, bd in info["brokerAddrTable"].items()}
            return cmd.response(ResponseCode.SUCCESS, body=fastjson_dialect(
                {"brokerAddrTable": table, "clusterAddrTable": {"DefaultCluster": sorted(table)}}))
        return cmd.response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                            f"request type {cmd.code} not supported by this name server")

    def close(self):
        self.sock.close()
        for c in self._conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()


def fastjson_dialect(obj) -> bytes:
    """Java's name server writes brokerAddrs (a Map<Long, String>) with bare keys."""
    text = json.dumps(obj, separators=(",", ":"))
    return text.replace('"brokerAddrs":{"0":', '"brokerAddrs":{0:').encode()
