"""Frames per second of the remoting codec (not collected by pytest).

    .venv/bin/python tests/broker/fronts/remoting/protocol/bench_protocol_codec.py [N]

A SEND_MESSAGE_V2 request as the Java client sends it (11 short extFields, 100-byte
body) and its SUCCESS response, in both serialize types: encode, decode one frame per
feed() call, and decode 1000 pipelined frames per feed() call.
"""
import sys
import time

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand
from rocketmq_emulator.broker.fronts.remoting.protocol.codec import FrameDecoder, encode

EXT = {"a": "yyzGroup2", "b": "yyztest2", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1491978653614",
       "h": "0", "i": "TAGS\x01TAG\x02WAIT\x01true\x02KEYS\x01ffff", "j": "0", "k": "false"}


def rate(n, fn):
    t = time.perf_counter()
    fn()
    return n / (time.perf_counter() - t)


def main(n: int = 100_000) -> None:
    for st, name in ((0, "JSON"), (1, "ROCKETMQ")):
        req = RemotingCommand.request(310, EXT, b"x" * 100)
        req.serialize_type = st
        resp = req.response(0, ext_fields={"msgId": "7F0000010000238F000000000001E240", "queueId": 0,
                                           "queueOffset": 12, "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"})
        for kind, cmd in (("request", req), ("response", resp)):
            frame = encode(cmd)
            enc = rate(n, lambda: [encode(cmd) for _ in range(n)])
            dec = FrameDecoder()
            one = rate(n, lambda: [dec.feed(frame) for _ in range(n)])
            batch, dec = frame * 1000, FrameDecoder()
            bulk = rate(n, lambda: [dec.feed(batch) for _ in range(n // 1000)])
            print(f"{name:8} {kind:8} {len(frame):4}B  encode {enc:9,.0f}/s  decode {one:9,.0f}/s  "
                  f"decode pipelined {bulk:9,.0f}/s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
