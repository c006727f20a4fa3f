"""The loopback transport: in-process like ``InProcessBroker``, but every command —
request, reply, and what the core sends later (held-pull replies, notifications) — is
encoded into a frame by the real codec and decoded from it on the other side, as over
TCP, without a socket.

What it is for: running a test or a scenario on the virtual clock (deterministic, idle
hours skipped) while the bytes still go through the wire format a real client and
server exchange — so a header that does not survive encoding (a non-string value, a
field the codec drops, a body too big for a frame) fails here as it would over TCP.
"""
from __future__ import annotations

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand
from rocketmq_emulator.broker.fronts.remoting.protocol.codec import decode, encode

from .inprocess import InProcessBroker, InProcessTransport

__all__ = ["LoopbackBroker", "through_the_wire"]


def through_the_wire(cmd: RemotingCommand) -> RemotingCommand:
    """``cmd`` as the other end reads it: encoded into one frame and decoded again.
    O(frame size); raises the codec's errors (LocalProtocolError, ProtocolError)."""
    return decode(encode(cmd))


class LoopbackBroker(InProcessBroker):
    """``InProcessBroker`` whose commands cross the real codec in both directions (so
    every call is a command: no typed shortcut)."""

    typed_calls = False

    def handle(self, transport: InProcessTransport, cmd: RemotingCommand) -> RemotingCommand | None:
        reply = super().handle(transport, through_the_wire(cmd))
        return through_the_wire(reply) if reply is not None else None

    def deliver(self, transport: InProcessTransport, cmd: RemotingCommand) -> None:
        super().deliver(transport, through_the_wire(cmd))
