"""The Pulsar commands as protobuf messages, built here from the protocol's field numbers
(PulsarApi's BaseCommand and the commands it carries), in a descriptor pool of our own:
no .proto text, no generated module. Every field is optional, so a command with a field
missing still parses; the front checks what it needs and answers with an error.

Grows with the front: the handshake first (CONNECT, CONNECTED, PING, PONG, ERROR).
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["BaseCommand", "CommandConnect", "CommandConnected", "CommandError", "CommandPing", "CommandPong",
           "FeatureFlags", "Type", "ServerError", "PROTOCOL_VERSION", "message"]

PROTOCOL_VERSION = 20          # what the 3.13.0 client speaks (ProtocolVersion v20)

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {"string": _F.TYPE_STRING, "bytes": _F.TYPE_BYTES, "bool": _F.TYPE_BOOL, "int32": _F.TYPE_INT32,
            "uint32": _F.TYPE_UINT32, "int64": _F.TYPE_INT64, "uint64": _F.TYPE_UINT64, "double": _F.TYPE_DOUBLE}
_PACKAGE = "rocketmq_emulator.pulsar_wire"

# BaseCommand.Type: the command numbers (their sub-message field in BaseCommand has the same number).
TYPES = {"CONNECT": 2, "CONNECTED": 3, "SUBSCRIBE": 4, "PRODUCER": 5, "SEND": 6, "SEND_RECEIPT": 7, "SEND_ERROR": 8,
         "MESSAGE": 9, "ACK": 10, "FLOW": 11, "UNSUBSCRIBE": 12, "SUCCESS": 13, "ERROR": 14, "CLOSE_PRODUCER": 15,
         "CLOSE_CONSUMER": 16, "PRODUCER_SUCCESS": 17, "PING": 18, "PONG": 19,
         "REDELIVER_UNACKNOWLEDGED_MESSAGES": 20, "PARTITIONED_METADATA": 21, "PARTITIONED_METADATA_RESPONSE": 22,
         "LOOKUP": 23, "LOOKUP_RESPONSE": 24, "CONSUMER_STATS": 25, "CONSUMER_STATS_RESPONSE": 26,
         "REACHED_END_OF_TOPIC": 27, "SEEK": 28, "GET_LAST_MESSAGE_ID": 29, "GET_LAST_MESSAGE_ID_RESPONSE": 30,
         "ACTIVE_CONSUMER_CHANGE": 31, "GET_TOPICS_OF_NAMESPACE": 32, "GET_TOPICS_OF_NAMESPACE_RESPONSE": 33}
SERVER_ERRORS = {"UnknownError": 0, "MetadataError": 1, "PersistenceError": 2, "AuthenticationError": 3,
                 "AuthorizationError": 4, "ConsumerBusy": 5, "ServiceNotReady": 6,
                 "ProducerBlockedQuotaExceededError": 7, "ProducerBlockedQuotaExceededException": 8,
                 "ChecksumError": 9, "UnsupportedVersionError": 10, "TopicNotFound": 11, "SubscriptionNotFound": 12,
                 "ConsumerNotFound": 13, "TooManyRequests": 14, "TopicTerminatedError": 15, "ProducerBusy": 16,
                 "InvalidTopicName": 17}

# message -> [(number, name, type)]: a scalar type name, an enum ("enum:Name") or a message name.
MESSAGES: dict[str, list[tuple[int, str, str]]] = {
    "FeatureFlags": [(1, "supports_auth_refresh", "bool"), (2, "supports_broker_entry_metadata", "bool")],
    "CommandConnect": [(1, "client_version", "string"), (3, "auth_data", "bytes"), (4, "protocol_version", "int32"),
                       (5, "auth_method_name", "string"), (6, "proxy_to_broker_url", "string"),
                       (10, "feature_flags", "FeatureFlags")],
    "CommandConnected": [(1, "server_version", "string"), (2, "protocol_version", "int32"),
                         (3, "max_message_size", "int32"), (4, "feature_flags", "FeatureFlags")],
    "CommandPing": [],
    "CommandPong": [],
    "CommandError": [(1, "request_id", "uint64"), (2, "error", "enum:ServerError"), (3, "message", "string")],
    "BaseCommand": [(1, "type", "enum:Type"), (2, "connect", "CommandConnect"), (3, "connected", "CommandConnected"),
                    (14, "error", "CommandError"), (18, "ping", "CommandPing"), (19, "pong", "CommandPong")],
}
ENUMS = {"Type": TYPES, "ServerError": SERVER_ERRORS}


def _file() -> descriptor_pb2.FileDescriptorProto:
    f = descriptor_pb2.FileDescriptorProto(name="rocketmq_emulator_pulsar_wire.proto", package=_PACKAGE,
                                           syntax="proto2")
    for name, values in ENUMS.items():
        e = f.enum_type.add(name=name)
        for value_name, number in values.items():
            e.value.add(name=value_name, number=number)
    for name, fields in MESSAGES.items():
        m = f.message_type.add(name=name)
        for number, field_name, kind in fields:
            fd = m.field.add(name=field_name, number=number, label=_F.LABEL_OPTIONAL)
            if kind in _SCALARS:
                fd.type = _SCALARS[kind]
            elif kind.startswith("enum:"):
                fd.type, fd.type_name = _F.TYPE_ENUM, f".{_PACKAGE}.{kind[5:]}"
            else:
                fd.type, fd.type_name = _F.TYPE_MESSAGE, f".{_PACKAGE}.{kind}"
    return f


_pool = descriptor_pool.DescriptorPool()
_pool.Add(_file())


def message(name: str):
    """The message class called ``name``."""
    return message_factory.GetMessageClass(_pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))


BaseCommand = message("BaseCommand")
CommandConnect = message("CommandConnect")
CommandConnected = message("CommandConnected")
CommandError = message("CommandError")
CommandPing = message("CommandPing")
CommandPong = message("CommandPong")
FeatureFlags = message("FeatureFlags")


class Type:
    """BaseCommand.Type numbers by name (Type.CONNECT == 2)."""


class ServerError:
    """ServerError numbers by name (ServerError.ChecksumError == 9)."""


for _name, _number in TYPES.items():
    setattr(Type, _name, _number)
for _name, _number in SERVER_ERRORS.items():
    setattr(ServerError, _name, _number)
