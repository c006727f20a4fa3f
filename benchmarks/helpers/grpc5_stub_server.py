#!/usr/bin/env python3
"""A do-nothing apache.rocketmq.v2 MessagingService for grpc5_throughput.py's stub floor:
what the real 5.x Python client reaches against a server that stores nothing and does no
work (the official generated stubs, grpc.aio, fixed answers). The gap between this and
the grpc.aio echo is the client's and the service's own cost; the gap between this and
`serve` is the broker's.

Usage (internal): python benchmarks/helpers/grpc5_stub_server.py PORTFILE
"""
from __future__ import annotations

import asyncio
import hashlib
import itertools
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import grpc  # noqa: E402

from rocketmq_emulator.broker.fronts.grpc5.convert import duration, pb, status  # noqa: E402
from rocketmq_emulator.broker.fronts.grpc5.stubs import service_grpc, spb  # noqa: E402

BODY = b"%010d" % 0 + b"x" * 90
DIGEST = hashlib.md5(BODY).hexdigest().upper()


class DoNothing(service_grpc.MessagingServiceServicer):
    def __init__(self) -> None:
        self.handles = itertools.count()

    async def QueryRoute(self, request, context):
        queue = pb.MessageQueue(topic=request.topic, id=0, permission=pb.READ_WRITE,
                                broker=pb.Broker(name="stub", id=0, endpoints=request.endpoints),
                                accept_message_types=[pb.NORMAL])
        return spb.QueryRouteResponse(status=status(pb.OK), message_queues=[queue])

    async def QueryAssignment(self, request, context):
        queue = pb.MessageQueue(topic=request.topic, id=0, permission=pb.READ_WRITE,
                                broker=pb.Broker(name="stub", id=0, endpoints=request.endpoints))
        return spb.QueryAssignmentResponse(status=status(pb.OK), assignments=[pb.Assignment(message_queue=queue)])

    async def Heartbeat(self, request, context):
        return spb.HeartbeatResponse(status=status(pb.OK))

    async def SendMessage(self, request, context):
        entry = spb.SendResultEntry(status=status(pb.OK), message_id=request.messages[0].system_properties.message_id,
                                    offset=0)
        return spb.SendMessageResponse(status=status(pb.OK), entries=[entry])

    async def ReceiveMessage(self, request, context):
        yield spb.ReceiveMessageResponse(status=status(pb.OK))
        for _ in range(max(request.batch_size, 1)):
            n = next(self.handles)
            sp = pb.SystemProperties(message_id=f"{n:032X}", body_digest=pb.Digest(type=pb.MD5, checksum=DIGEST),
                                     body_encoding=pb.IDENTITY, message_type=pb.NORMAL, receipt_handle=f"h{n}",
                                     queue_id=0, queue_offset=n, invisible_duration=duration(60_000),
                                     delivery_attempt=1)
            sp.born_timestamp.seconds = sp.store_timestamp.seconds = 1
            yield spb.ReceiveMessageResponse(message=pb.Message(topic=request.message_queue.topic, body=BODY,
                                                                system_properties=sp))
        ts = spb.ReceiveMessageResponse()
        ts.delivery_timestamp.seconds = 1
        yield ts

    async def AckMessage(self, request, context):
        entries = [spb.AckMessageResultEntry(message_id=e.message_id, receipt_handle=e.receipt_handle,
                                             status=status(pb.OK)) for e in request.entries]
        return spb.AckMessageResponse(status=status(pb.OK), entries=entries)

    async def NotifyClientTermination(self, request, context):
        return spb.NotifyClientTerminationResponse(status=status(pb.OK))

    async def Telemetry(self, request_iterator, context):
        async for command in request_iterator:
            if command.HasField("settings"):
                settings = pb.Settings()
                settings.CopyFrom(command.settings)
                if settings.HasField("subscription"):
                    settings.subscription.receive_batch_size = 32
                    settings.subscription.long_polling_timeout.seconds = 20
                    settings.backoff_policy.max_attempts = 17
                    settings.backoff_policy.customized_backoff.next.add(seconds=10)
                else:
                    settings.publishing.max_body_size = 4 * 1024 * 1024
                    settings.backoff_policy.max_attempts = 3
                    eb = settings.backoff_policy.exponential_backoff
                    eb.initial.nanos, eb.max.seconds, eb.multiplier = 10_000_000, 1, 2.0
                yield spb.TelemetryCommand(status=status(pb.OK), settings=settings)


async def serve(portfile: str) -> None:
    server = grpc.aio.server()
    service_grpc.add_MessagingServiceServicer_to_server(DoNothing(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    Path(portfile + ".tmp").write_text(str(port))
    os.replace(portfile + ".tmp", portfile)
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(serve(sys.argv[1]))
