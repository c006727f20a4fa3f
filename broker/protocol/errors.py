"""The protocol's two kinds of failure, split the way h11 splits them.

``ProtocolError``: the peer sent bytes that are not a valid RocketMQ remoting frame (or a
body that is not a valid batch / JSON document). The connection can no longer be trusted
and should be closed; a ``FrameDecoder`` that raised it stays dead.

``LocalProtocolError``: this process asked the codec to do something it cannot do, such as
encoding a header longer than 24 bits can describe, or a code that does not fit the
ROCKETMQ binary header's int16. Nothing was sent; fix the caller.
"""
from __future__ import annotations

__all__ = ["ProtocolError", "LocalProtocolError"]


class ProtocolError(Exception):
    """Remote garbage: the peer broke the wire format. Close the connection."""


class LocalProtocolError(Exception):
    """Local misuse: the command cannot be represented on the wire as asked."""
