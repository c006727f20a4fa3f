"""rocketmq-emulator's Python client: Producer, PushConsumer (concurrently and orderly),
the in-process and TCP transports, the client runtime (time travel on a VirtualClock) and the
pytest plugin (``client_sdk.pytest_plugin``).

    from . import EmbeddedBroker, Message, ConsumeConcurrentlyStatus

Names are imported lazily (PEP 562): pytest loads the plugin in every session, and that
must not import the broker core until a test asks for it.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "EmbeddedBroker": "embedded",
    "RemoteBroker": "transport.remote",
    "ClientRuntime": "runtime",
    "Producer": "producer",
    "PushConsumer": "push_consumer",
    "Message": "message",
    "MessageExt": "message",
    "MessageQueue": "message",
    "SendResult": "message",
    "SendStatus": "message",
    "LocalTransactionState": "transaction",
    "TransactionSendResult": "transaction",
    "MessageModel": "push_consumer",
    "ConsumeFromWhere": "push_consumer",
    "ConsumerStats": "push_consumer",
    "ConsumeConcurrentlyStatus": "listener",
    "ConsumeOrderlyStatus": "listener",
    "ConsumeConcurrentlyContext": "listener",
    "ConsumeOrderlyContext": "listener",
    "MessageListenerConcurrently": "listener",
    "MessageListenerOrderly": "listener",
    "CONSUME_SUCCESS": "listener",
    "RECONSUME_LATER": "listener",
    "SUCCESS": "listener",
    "SUSPEND_CURRENT_QUEUE_A_MOMENT": "listener",
    "ProcessQueue": "process_queue",
    "UniqKeyGenerator": "uniq_key",
    "decode_uniq_key": "uniq_key",
    "MessageSelector": "subscription",
    "MQClientError": "errors",
    "MQBrokerError": "errors",
    "ServerClockError": "errors",
    "RemotingError": "errors",
    "RemotingTimeoutError": "errors",
    "RemotingConnectError": "errors",
    "ListenerResultError": "errors",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'client_sdk' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
