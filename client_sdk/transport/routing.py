"""Where a 4.x request goes in a cluster, as RocketMQ's client decides it: route and
cluster requests to the name server; HEART_BEAT and UNREGISTER_CLIENT to every broker;
a request that names its broker (``bname``, ``n`` in SEND_MESSAGE_V2 / batch headers,
``mqSet[].brokerName`` in LOCK/UNLOCK bodies) to that one; anything else to any one.
Shared by the TCP transport and the in-process cluster transport."""
from __future__ import annotations

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.broker.fronts.remoting.protocol.fastjson import loads_fastjson

__all__ = ["NAME_SERVER_CODES", "EVERY_BROKER_CODES", "broker_name_of"]

NAME_SERVER_CODES = frozenset({RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_BROKER_CLUSTER_INFO})
EVERY_BROKER_CODES = frozenset({RequestCode.HEART_BEAT, RequestCode.UNREGISTER_CLIENT})
_SEND_CODES = frozenset({RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE})
_LOCK_CODES = frozenset({RequestCode.LOCK_BATCH_MQ, RequestCode.UNLOCK_BATCH_MQ})


def broker_name_of(cmd: RemotingCommand) -> str | None:
    """The broker a request names, None when it names none."""
    ext = cmd.ext_fields
    if ext:
        name = ext.get("bname")
        if name is None and cmd.code in _SEND_CODES:
            name = ext.get("n")
        if name is not None:
            return name
    if cmd.code in _LOCK_CODES and cmd.body:
        try:
            mqs = loads_fastjson(cmd.body).get("mqSet") or []
            return mqs[0]["brokerName"] if mqs else None
        except (ValueError, AttributeError, KeyError, TypeError, IndexError):
            return None
    return None
