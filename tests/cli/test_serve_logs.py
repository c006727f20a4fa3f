"""serve's log under hostile clients (issue 34, item 5): a malformed request on any front
is one WARNING line without a traceback; a flood of one kind is a few lines a second
and one "suppressed N similar lines" line; a name a client chose cannot forge a line.
Against `serve` subprocesses, reading their stderr."""
from __future__ import annotations

import socket
import struct

import grpc
import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ
from tests.support.logs import LOG_LINE, told
from tests.support.processes import EmulatorProcess
from tests.support.remoting import RawClient

FORGED = "T\n2024-01-01 00:00:00,000 ERROR broker.serve: forged line"


@pytest.fixture
def server(tmp_path):
    s = EmulatorProcess(tmp_path / "store", grpc=True, pulsar=True, http=True).start()
    yield s
    s.stop()


def stderr_of(server) -> str:
    server.stop()
    return server.proc.stderr.read()


def test_a_name_with_a_newline_cannot_forge_a_log_line(server):
    c = RawClient(server.port)
    for req in (RemotingCommand.request(RQ.SEND_MESSAGE_V2, {"a": "PG", "b": FORGED, "c": "TBW102", "d": 1, "e": 0,
                                                             "f": 0, "g": 1, "h": 0, "i": ""}, b"x"),
                RemotingCommand.request(RQ.UPDATE_AND_CREATE_TOPIC, {"topic": FORGED, "readQueueNums": 1,
                                                                     "writeQueueNums": 1, "perm": 6}),
                RemotingCommand.request(RQ.HEART_BEAT, {}, b'{"clientID":"c","consumerDataSet":[{"groupName":'
                                        b'"g\\n2024-01-01 00:00:00,000 ERROR x: forged group","subscriptionDataSet":[]'
                                        b'}],"producerDataSet":[]}')):
        assert c.call(req).code != 0
    c.close()
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")        # a 5.x call with such a topic
    route = channel.unary_unary("/apache.rocketmq.v2.MessagingService/QueryRoute")
    topic = FORGED.encode()
    route(b"\x0a" + bytes([len(topic) + 2]) + b"\x12" + bytes([len(topic)]) + topic, timeout=10)
    channel.close()
    with socket.create_connection(("127.0.0.1", server.http_port), timeout=10) as s:     # and an HTTP path
        s.sendall(b"GET /%0A2024-01-01%2000:00:00,000%20ERROR%20x:%20forged HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Connection: close\r\n\r\n")
        while s.recv(65536):
            pass
    err = stderr_of(server)
    assert err.count("forged") >= 3                 # a topic, a group, a path (the 5.x refusal is not logged)
    assert all(LOG_LINE.match(line) for line in err.splitlines()), err
    assert "\\n2024-01-01 00:00:00,000 ERROR broker.serve: forged line" in err        # written, escaped


def test_a_flood_of_malformed_grpc_calls_is_a_few_lines_without_tracebacks(server):
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
    calls = {m: channel.unary_unary(f"/apache.rocketmq.v2.MessagingService/{m}")
             for m in ("SendMessage", "QueryRoute", "AckMessage", "PullMessage")}
    for i in range(1000):
        name = list(calls)[i % 4]
        with pytest.raises(grpc.RpcError) as caught:
            calls[name](b"\xff" * 20, timeout=10)                            # 20 bytes that are no protobuf
        expected = grpc.StatusCode.UNIMPLEMENTED if name == "PullMessage" else grpc.StatusCode.INTERNAL
        assert caught.value.code() == expected
    channel.close()
    err = stderr_of(server)
    assert "Traceback" not in err and " ERROR " not in err
    assert told(err, "a malformed request") == 750
    assert len(err.encode()) < 20_000, f"{len(err.encode())} bytes of log for 1000 malformed calls"


def test_a_flood_of_garbage_on_the_remoting_and_pulsar_ports_is_a_few_lines(server):
    for _ in range(300):
        for port, garbage in ((server.port, struct.pack(">i", -5) + b"junk"),
                              (server.pulsar_port, struct.pack(">II", 8, 4) + b"\xff" * 4)):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(garbage)
                try:
                    while s.recv(65536):
                        pass
                except ConnectionResetError:
                    pass
    err = stderr_of(server)
    assert "Traceback" not in err and " ERROR " not in err
    assert told(err, "frame length -5 is below the minimum") == 300
    assert told(err, "Pulsar connection") == 300
    assert len(err.splitlines()) < 100
