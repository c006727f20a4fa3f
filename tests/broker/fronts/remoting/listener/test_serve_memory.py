"""`serve` holds no memory per message: a long produce/consume run leaves its heap flat.

The server is a real `serve` subprocess; the client pipelines SEND_MESSAGE_V2 frames
and pulls everything back, committing offsets as it goes. The heap (RssAnon, from
/proc) is read after a warm-up and again after three times as many messages. The
commit-log pages the server maps (RssFile) are the kernel's page cache, not counted.
benchmarks/rss_bench.py runs the same over a million messages with the SDK.
"""
from __future__ import annotations

import socket

from rocketmq_emulator.broker.fronts.remoting.protocol.typed import FLAG_SUBSCRIPTION
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ, ResponseCode as RC
from rocketmq_emulator.broker.fronts.remoting.protocol.codec import FrameDecoder, encode
from rocketmq_emulator.store.records import iter_records

from tests.support.memory import status_mib
from tests.support.processes import EmulatorProcess

WINDOW = 256


class Pipeline:
    """Requests written WINDOW at a time on one connection; replies read in order."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)   # a oneway then a pull: no Nagle wait
        self.decoder = FrameDecoder()
        self.ready: list[RemotingCommand] = []

    def replies(self, requests: list[RemotingCommand]) -> list[RemotingCommand]:
        self.sock.sendall(b"".join(encode(r) for r in requests))
        want = sum(not r.is_oneway for r in requests)
        while len(self.ready) < want:
            data = self.sock.recv(1 << 20)
            assert data, "the server closed the connection"
            self.ready.extend(self.decoder.feed(data))
        got, self.ready = self.ready[:want], self.ready[want:]
        return got


def produce(pipe: Pipeline, start: int, n: int) -> None:
    for first in range(start, start + n, WINDOW):
        sends = [RemotingCommand.request(RQ.SEND_MESSAGE_V2, {
            "a": "PG", "b": "Flat", "c": "TBW102", "d": 4, "e": i % 4, "f": 0, "g": 1, "h": 0,
            "i": f"UNIQ_KEY\u0001{i:032X}\u0002WAIT\u0001true"}, b"m" * 100)
            for i in range(first, min(first + WINDOW, start + n))]
        assert all(r.code == RC.SUCCESS for r in pipe.replies(sends))


def consume(pipe: Pipeline, offsets: list[int]) -> int:
    """Pull every queue to its end, committing as a consumer does; returns messages read."""
    read = 0
    for qid in range(4):
        while True:
            pull = RemotingCommand.request(RQ.PULL_MESSAGE, {
                "consumerGroup": "FlatGroup", "topic": "Flat", "queueId": qid, "queueOffset": offsets[qid],
                "maxMsgNums": 32, "sysFlag": FLAG_SUBSCRIPTION, "commitOffset": 0, "suspendTimeoutMillis": 0,
                "subVersion": 0, "subscription": "*"})
            reply, = pipe.replies([pull])
            if reply.code != RC.SUCCESS:
                break
            got = sum(1 for _ in iter_records(reply.body))
            read += got
            offsets[qid] += got
            pipe.replies([RemotingCommand.request(RQ.UPDATE_CONSUMER_OFFSET, {
                "consumerGroup": "FlatGroup", "topic": "Flat", "queueId": qid, "commitOffset": offsets[qid]},
                oneway=True)])
    return read


def test_the_server_heap_stays_flat_over_a_long_produce_consume_run(tmp_path):
    server = EmulatorProcess(tmp_path / "store").start()
    try:
        pipe = Pipeline(server.port)
        offsets = [0, 0, 0, 0]
        produce(pipe, 0, 20_000)
        assert consume(pipe, offsets) == 20_000
        warm = status_mib(server.proc.pid, "RssAnon")
        produce(pipe, 20_000, 60_000)
        assert consume(pipe, offsets) == 60_000
        grown = status_mib(server.proc.pid, "RssAnon") - warm
        print(f"server heap {warm:.1f} MiB after 20,000 messages, +{grown:.1f} MiB after 60,000 more")
        # Before: every message left an event in memory, ~0.5 KiB each (+30 MiB here).
        # What stays is the consume queues' 20-byte entries (1.2 MiB) and allocator slack.
        assert grown < 8, f"the server heap grew {grown:.1f} MiB over 60,000 messages"
    finally:
        server.stop()
