"""The protocol's two kinds of failure, split the way h11 splits them.

``ProtocolError``: the peer sent bytes that are not a valid RocketMQ remoting frame (or a
body that is not a valid batch / JSON document). The connection can no longer be trusted
and should be closed; a ``FrameDecoder`` that raised it stays dead.

``RequestRefused``: the frame was fine but the request is not: a body that is not the
JSON document its code needs, a field of the wrong type, an illegal group name. The
broker answers it with an error code and the reason as remark, logs one WARN line, and
keeps serving the connection.

``LocalProtocolError``: this process asked the codec to do something it cannot do, such as
encoding a header longer than 24 bits can describe, or a code that does not fit the
ROCKETMQ binary header's int16. Nothing was sent; fix the caller.
"""
from __future__ import annotations

# (the core's error: a request refused is the core's verdict, which the codec's header
# readers give too; defined with the core, named here for the codec's users)
from ....errors import RequestRefused

__all__ = ["ProtocolError", "RequestRefused", "LocalProtocolError"]


class ProtocolError(Exception):
    """Remote garbage: the peer broke the wire format. Close the connection."""


class LocalProtocolError(Exception):
    """Local misuse: the command cannot be represented on the wire as asked."""
