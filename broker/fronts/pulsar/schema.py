"""The Pulsar commands as protobuf messages, built here from the protocol's field numbers
(PulsarApi's BaseCommand and the commands it carries), in a descriptor pool of our own:
no .proto text, no generated module. Every field is optional, so a command with a field
missing still parses; the front checks what it needs and answers with an error.

The commands a broker serves to the 3.13.0 client and the metadata it reads (reference
pulsar-protocol.md §1–§8); enums are numbers by name on the classes below (``Type.SEND``,
``SubType.Shared``, ...).
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["BaseCommand", "MessageMetadata", "SingleMessageMetadata", "MessageIdData", "Type", "ServerError",
           "SubType", "InitialPosition", "LookupType", "PartitionedLookupType", "AckType", "ValidationError",
           "CompressionType", "ProducerAccessMode", "TopicsMode", "PROTOCOL_VERSION", "message", "TYPES", "MESSAGES"]

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
         "ACTIVE_CONSUMER_CHANGE": 31, "GET_TOPICS_OF_NAMESPACE": 32, "GET_TOPICS_OF_NAMESPACE_RESPONSE": 33,
         "GET_SCHEMA": 34, "GET_SCHEMA_RESPONSE": 35, "AUTH_CHALLENGE": 36, "AUTH_RESPONSE": 37, "ACK_RESPONSE": 38,
         "GET_OR_CREATE_SCHEMA": 39, "GET_OR_CREATE_SCHEMA_RESPONSE": 40,
         "NEW_TXN": 50, "NEW_TXN_RESPONSE": 51, "ADD_PARTITION_TO_TXN": 52, "ADD_PARTITION_TO_TXN_RESPONSE": 53,
         "ADD_SUBSCRIPTION_TO_TXN": 54, "ADD_SUBSCRIPTION_TO_TXN_RESPONSE": 55, "END_TXN": 56,
         "END_TXN_RESPONSE": 57, "END_TXN_ON_PARTITION": 58, "END_TXN_ON_PARTITION_RESPONSE": 59,
         "END_TXN_ON_SUBSCRIPTION": 60, "END_TXN_ON_SUBSCRIPTION_RESPONSE": 61, "TC_CLIENT_CONNECT_REQUEST": 62,
         "TC_CLIENT_CONNECT_RESPONSE": 63, "WATCH_TOPIC_LIST": 64, "WATCH_TOPIC_LIST_SUCCESS": 65,
         "WATCH_TOPIC_UPDATE": 66, "WATCH_TOPIC_LIST_CLOSE": 67}
SERVER_ERRORS = {"UnknownError": 0, "MetadataError": 1, "PersistenceError": 2, "AuthenticationError": 3,
                 "AuthorizationError": 4, "ConsumerBusy": 5, "ServiceNotReady": 6,
                 "ProducerBlockedQuotaExceededError": 7, "ProducerBlockedQuotaExceededException": 8,
                 "ChecksumError": 9, "UnsupportedVersionError": 10, "TopicNotFound": 11, "SubscriptionNotFound": 12,
                 "ConsumerNotFound": 13, "TooManyRequests": 14, "TopicTerminatedError": 15, "ProducerBusy": 16,
                 "InvalidTopicName": 17, "IncompatibleSchema": 18, "ConsumerAssignError": 19,
                 "TransactionCoordinatorNotFound": 20, "InvalidTxnStatus": 21, "NotAllowedError": 22,
                 "TransactionConflict": 23, "TransactionNotFound": 24, "ProducerFenced": 25}

# message -> [(number, name, type[, option])]: a scalar type name, an enum ("enum:Name") or a
# message name; option "repeated" or "default=<value>" (proto2 defaults a client relies on).
MESSAGES: dict[str, list[tuple]] = {
    "KeyValue": [(1, "key", "string"), (2, "value", "string")],
    "KeyLongValue": [(1, "key", "string"), (2, "value", "uint64")],
    "MessageIdData": [(1, "ledgerId", "uint64"), (2, "entryId", "uint64"), (3, "partition", "int32", "default=-1"),
                      (4, "batch_index", "int32", "default=-1"), (5, "ack_set", "int64", "repeated"),
                      (6, "batch_size", "int32")],
    "MessageMetadata": [(1, "producer_name", "string"), (2, "sequence_id", "uint64"), (3, "publish_time", "uint64"),
                        (4, "properties", "KeyValue", "repeated"), (5, "replicated_from", "string"),
                        (6, "partition_key", "string"), (7, "replicate_to", "string", "repeated"),
                        (8, "compression", "enum:CompressionType"), (9, "uncompressed_size", "uint32"),
                        (11, "num_messages_in_batch", "int32", "default=1"), (12, "event_time", "uint64"),
                        (16, "schema_version", "bytes"), (17, "partition_key_b64_encoded", "bool"),
                        (18, "ordering_key", "bytes"), (19, "deliver_at_time", "int64"),
                        (24, "highest_sequence_id", "uint64"), (25, "null_value", "bool"), (26, "uuid", "string"),
                        (27, "num_chunks_from_msg", "int32"), (28, "total_chunk_msg_size", "int32"),
                        (29, "chunk_id", "int32"), (30, "null_partition_key", "bool")],
    "SingleMessageMetadata": [(1, "properties", "KeyValue", "repeated"), (2, "partition_key", "string"),
                              (3, "payload_size", "int32"), (4, "compacted_out", "bool"), (5, "event_time", "uint64"),
                              (6, "partition_key_b64_encoded", "bool"), (7, "ordering_key", "bytes"),
                              (8, "sequence_id", "uint64"), (9, "null_value", "bool"),
                              (10, "null_partition_key", "bool")],
    "BrokerEntryMetadata": [(1, "broker_timestamp", "uint64"), (2, "index", "uint64")],
    "FeatureFlags": [(1, "supports_auth_refresh", "bool"), (2, "supports_broker_entry_metadata", "bool"),
                     (3, "supports_partial_producer", "bool"), (4, "supports_topic_watchers", "bool")],
    "CommandConnect": [(1, "client_version", "string"), (3, "auth_data", "bytes"), (4, "protocol_version", "int32"),
                       (5, "auth_method_name", "string"), (6, "proxy_to_broker_url", "string"),
                       (10, "feature_flags", "FeatureFlags")],
    "CommandConnected": [(1, "server_version", "string"), (2, "protocol_version", "int32"),
                         (3, "max_message_size", "int32"), (4, "feature_flags", "FeatureFlags")],
    "CommandSubscribe": [(1, "topic", "string"), (2, "subscription", "string"), (3, "subType", "enum:SubType"),
                         (4, "consumer_id", "uint64"), (5, "request_id", "uint64"), (6, "consumer_name", "string"),
                         (7, "priority_level", "int32"), (8, "durable", "bool", "default=true"),
                         (9, "start_message_id", "MessageIdData"), (10, "metadata", "KeyValue", "repeated"),
                         (11, "read_compacted", "bool"), (13, "initialPosition", "enum:InitialPosition"),
                         (14, "replicate_subscription_state", "bool"),
                         (15, "force_topic_creation", "bool", "default=true"),
                         (16, "start_message_rollback_duration_sec", "uint64"),
                         (18, "subscription_properties", "KeyValue", "repeated"), (19, "consumer_epoch", "uint64")],
    "CommandPartitionedTopicMetadata": [(1, "topic", "string"), (2, "request_id", "uint64")],
    "CommandPartitionedTopicMetadataResponse": [(1, "partitions", "uint32"), (2, "request_id", "uint64"),
                                                (3, "response", "enum:PartitionedLookupType"),
                                                (4, "error", "enum:ServerError"), (5, "message", "string")],
    "CommandLookupTopic": [(1, "topic", "string"), (2, "request_id", "uint64"), (3, "authoritative", "bool"),
                           (7, "advertised_listener_name", "string")],
    "CommandLookupTopicResponse": [(1, "brokerServiceUrl", "string"), (2, "brokerServiceUrlTls", "string"),
                                   (3, "response", "enum:LookupType"), (4, "request_id", "uint64"),
                                   (5, "authoritative", "bool"), (6, "error", "enum:ServerError"),
                                   (7, "message", "string"), (8, "proxy_through_service_url", "bool")],
    "CommandProducer": [(1, "topic", "string"), (2, "producer_id", "uint64"), (3, "request_id", "uint64"),
                        (4, "producer_name", "string"), (5, "encrypted", "bool"),
                        (6, "metadata", "KeyValue", "repeated"), (8, "epoch", "uint64"),
                        (9, "user_provided_producer_name", "bool", "default=true"),
                        (10, "producer_access_mode", "enum:ProducerAccessMode"), (11, "topic_epoch", "uint64"),
                        (13, "initial_subscription_name", "string")],
    "CommandSend": [(1, "producer_id", "uint64"), (2, "sequence_id", "uint64"),
                    (3, "num_messages", "int32", "default=1"), (6, "highest_sequence_id", "uint64"),
                    (7, "is_chunk", "bool"), (8, "marker", "bool")],
    "CommandSendReceipt": [(1, "producer_id", "uint64"), (2, "sequence_id", "uint64"),
                           (3, "message_id", "MessageIdData"), (4, "highest_sequence_id", "uint64")],
    "CommandSendError": [(1, "producer_id", "uint64"), (2, "sequence_id", "uint64"), (3, "error", "enum:ServerError"),
                         (4, "message", "string")],
    "CommandMessage": [(1, "consumer_id", "uint64"), (2, "message_id", "MessageIdData"),
                       (3, "redelivery_count", "uint32"), (4, "ack_set", "int64", "repeated"),
                       (5, "consumer_epoch", "uint64")],
    "CommandAck": [(1, "consumer_id", "uint64"), (2, "ack_type", "enum:AckType"),
                   (3, "message_id", "MessageIdData", "repeated"), (4, "validation_error", "enum:ValidationError"),
                   (5, "properties", "KeyLongValue", "repeated"), (6, "txnid_least_bits", "uint64"),
                   (7, "txnid_most_bits", "uint64"), (8, "request_id", "uint64")],
    "CommandAckResponse": [(1, "consumer_id", "uint64"), (2, "txnid_least_bits", "uint64"),
                           (3, "txnid_most_bits", "uint64"), (4, "error", "enum:ServerError"), (5, "message", "string"),
                           (6, "request_id", "uint64")],
    "CommandConsumerStats": [(1, "request_id", "uint64"), (4, "consumer_id", "uint64")],
    "CommandConsumerStatsResponse": [(1, "request_id", "uint64"), (2, "error_code", "enum:ServerError"),
                                     (3, "error_message", "string"), (4, "msgRateOut", "double"),
                                     (5, "msgThroughputOut", "double"), (6, "msgRateRedeliver", "double"),
                                     (7, "consumerName", "string"), (8, "availablePermits", "uint64"),
                                     (9, "unackedMessages", "uint64"), (10, "blockedConsumerOnUnackedMsgs", "bool"),
                                     (11, "address", "string"), (12, "connectedSince", "string"), (13, "type", "string"),
                                     (14, "msgRateExpired", "double"), (15, "msgBacklog", "uint64"),
                                     (16, "messageAckRate", "double")],
    "CommandGetTopicsOfNamespace": [(1, "request_id", "uint64"), (2, "namespace", "string"),
                                    (3, "mode", "enum:TopicsMode"), (4, "topics_pattern", "string"),
                                    (5, "topics_hash", "string")],
    "CommandGetTopicsOfNamespaceResponse": [(1, "request_id", "uint64"), (2, "topics", "string", "repeated"),
                                            (3, "filtered", "bool"), (4, "topics_hash", "string"),
                                            (5, "changed", "bool", "default=true")],
    "Schema": [(1, "name", "string"), (3, "schema_data", "bytes"), (4, "type", "int32"),
               (5, "properties", "KeyValue", "repeated")],
    "CommandGetSchema": [(1, "request_id", "uint64"), (2, "topic", "string"), (3, "schema_version", "bytes")],
    "CommandGetSchemaResponse": [(1, "request_id", "uint64"), (2, "error_code", "enum:ServerError"),
                                 (3, "error_message", "string"), (4, "schema", "Schema"), (5, "schema_version", "bytes")],
    "CommandGetOrCreateSchema": [(1, "request_id", "uint64"), (2, "topic", "string"), (3, "schema", "Schema")],
    "CommandGetOrCreateSchemaResponse": [(1, "request_id", "uint64"), (2, "error_code", "enum:ServerError"),
                                         (3, "error_message", "string"), (4, "schema_version", "bytes")],
    # transactions: only what a broker that does not serve them reads of them
    "TxnSubscription": [(1, "topic", "string"), (2, "subscription", "string")],
    "CommandTcClientConnectRequest": [(1, "request_id", "uint64"), (2, "tc_id", "uint64")],
    "CommandNewTxn": [(1, "request_id", "uint64"), (2, "txn_ttl_seconds", "uint64"), (3, "tc_id", "uint64")],
    "CommandAddPartitionToTxn": [(1, "request_id", "uint64"), (2, "txnid_least_bits", "uint64"),
                                 (3, "txnid_most_bits", "uint64"), (4, "partitions", "string", "repeated")],
    "CommandAddSubscriptionToTxn": [(1, "request_id", "uint64"), (2, "txnid_least_bits", "uint64"),
                                    (3, "txnid_most_bits", "uint64"), (4, "subscription", "TxnSubscription", "repeated")],
    "CommandEndTxn": [(1, "request_id", "uint64"), (2, "txnid_least_bits", "uint64"), (3, "txnid_most_bits", "uint64"),
                      (4, "txn_action", "int32")],
    "CommandEndTxnOnPartition": [(1, "request_id", "uint64"), (2, "txnid_least_bits", "uint64"),
                                 (3, "txnid_most_bits", "uint64"), (4, "topic", "string"), (5, "txn_action", "int32"),
                                 (6, "txnid_least_bits_of_low_watermark", "uint64")],
    "CommandEndTxnOnSubscription": [(1, "request_id", "uint64"), (2, "txnid_least_bits", "uint64"),
                                    (3, "txnid_most_bits", "uint64"), (4, "subscription", "TxnSubscription"),
                                    (5, "txn_action", "int32"), (6, "txnid_least_bits_of_low_watermark", "uint64")],
    "CommandWatchTopicList": [(1, "request_id", "uint64"), (2, "watcher_id", "uint64"), (3, "namespace", "string"),
                              (4, "topics_pattern", "string"), (5, "topics_hash", "string")],
    "CommandWatchTopicListSuccess": [(1, "request_id", "uint64"), (2, "watcher_id", "uint64"),
                                     (3, "topic", "string", "repeated"), (4, "topics_hash", "string")],
    "CommandWatchTopicUpdate": [(1, "watcher_id", "uint64"), (2, "new_topics", "string", "repeated"),
                                (3, "deleted_topics", "string", "repeated"), (4, "topics_hash", "string")],
    "CommandWatchTopicListClose": [(1, "request_id", "uint64"), (2, "watcher_id", "uint64")],
    "CommandActiveConsumerChange": [(1, "consumer_id", "uint64"), (2, "is_active", "bool")],
    "CommandFlow": [(1, "consumer_id", "uint64"), (2, "messagePermits", "uint32")],
    "CommandUnsubscribe": [(1, "consumer_id", "uint64"), (2, "request_id", "uint64")],
    "CommandSeek": [(1, "consumer_id", "uint64"), (2, "request_id", "uint64"), (3, "message_id", "MessageIdData"),
                    (4, "message_publish_time", "uint64")],
    "CommandReachedEndOfTopic": [(1, "consumer_id", "uint64")],
    "CommandCloseProducer": [(1, "producer_id", "uint64"), (2, "request_id", "uint64")],
    "CommandCloseConsumer": [(1, "consumer_id", "uint64"), (2, "request_id", "uint64")],
    "CommandRedeliverUnacknowledgedMessages": [(1, "consumer_id", "uint64"),
                                               (2, "message_ids", "MessageIdData", "repeated"),
                                               (3, "consumer_epoch", "uint64")],
    "CommandSuccess": [(1, "request_id", "uint64")],
    "CommandProducerSuccess": [(1, "request_id", "uint64"), (2, "producer_name", "string"),
                               (3, "last_sequence_id", "int64", "default=-1"), (4, "schema_version", "bytes"),
                               (5, "topic_epoch", "uint64"), (6, "producer_ready", "bool", "default=true")],
    "CommandError": [(1, "request_id", "uint64"), (2, "error", "enum:ServerError"), (3, "message", "string")],
    "CommandPing": [],
    "CommandPong": [],
    "CommandGetLastMessageId": [(1, "consumer_id", "uint64"), (2, "request_id", "uint64")],
    "CommandGetLastMessageIdResponse": [(1, "last_message_id", "MessageIdData"), (2, "request_id", "uint64"),
                                        (3, "consumer_mark_delete_position", "MessageIdData")],
    "BaseCommand": [(1, "type", "enum:Type"), (2, "connect", "CommandConnect"), (3, "connected", "CommandConnected"),
                    (4, "subscribe", "CommandSubscribe"), (5, "producer", "CommandProducer"),
                    (6, "send", "CommandSend"), (7, "send_receipt", "CommandSendReceipt"),
                    (8, "send_error", "CommandSendError"), (9, "message", "CommandMessage"), (10, "ack", "CommandAck"),
                    (11, "flow", "CommandFlow"), (12, "unsubscribe", "CommandUnsubscribe"),
                    (13, "success", "CommandSuccess"), (14, "error", "CommandError"),
                    (15, "close_producer", "CommandCloseProducer"), (16, "close_consumer", "CommandCloseConsumer"),
                    (17, "producer_success", "CommandProducerSuccess"), (18, "ping", "CommandPing"),
                    (19, "pong", "CommandPong"),
                    (20, "redeliverUnacknowledgedMessages", "CommandRedeliverUnacknowledgedMessages"),
                    (21, "partitionMetadata", "CommandPartitionedTopicMetadata"),
                    (22, "partitionMetadataResponse", "CommandPartitionedTopicMetadataResponse"),
                    (23, "lookupTopic", "CommandLookupTopic"),
                    (24, "lookupTopicResponse", "CommandLookupTopicResponse"),
                    (25, "consumerStats", "CommandConsumerStats"),
                    (26, "consumerStatsResponse", "CommandConsumerStatsResponse"),
                    (27, "reachedEndOfTopic", "CommandReachedEndOfTopic"), (28, "seek", "CommandSeek"),
                    (29, "getLastMessageId", "CommandGetLastMessageId"),
                    (30, "getLastMessageIdResponse", "CommandGetLastMessageIdResponse"),
                    (31, "active_consumer_change", "CommandActiveConsumerChange"),
                    (32, "getTopicsOfNamespace", "CommandGetTopicsOfNamespace"),
                    (33, "getTopicsOfNamespaceResponse", "CommandGetTopicsOfNamespaceResponse"),
                    (34, "getSchema", "CommandGetSchema"), (35, "getSchemaResponse", "CommandGetSchemaResponse"),
                    (38, "ackResponse", "CommandAckResponse"), (39, "getOrCreateSchema", "CommandGetOrCreateSchema"),
                    (40, "getOrCreateSchemaResponse", "CommandGetOrCreateSchemaResponse"),
                    (50, "newTxn", "CommandNewTxn"), (52, "addPartitionToTxn", "CommandAddPartitionToTxn"),
                    (54, "addSubscriptionToTxn", "CommandAddSubscriptionToTxn"), (56, "endTxn", "CommandEndTxn"),
                    (58, "endTxnOnPartition", "CommandEndTxnOnPartition"),
                    (60, "endTxnOnSubscription", "CommandEndTxnOnSubscription"),
                    (62, "tcClientConnectRequest", "CommandTcClientConnectRequest"),
                    (64, "watchTopicList", "CommandWatchTopicList"),
                    (65, "watchTopicListSuccess", "CommandWatchTopicListSuccess"),
                    (66, "watchTopicUpdate", "CommandWatchTopicUpdate"),
                    (67, "watchTopicListClose", "CommandWatchTopicListClose")],
}
ENUMS = {"Type": TYPES, "ServerError": SERVER_ERRORS,
         "CompressionType": {"NONE": 0, "LZ4": 1, "ZLIB": 2, "ZSTD": 3, "SNAPPY": 4},
         "ProducerAccessMode": {"Shared": 0, "Exclusive": 1, "WaitForExclusive": 2, "ExclusiveWithFencing": 3},
         "SubType": {"Exclusive": 0, "Shared": 1, "Failover": 2, "Key_Shared": 3},
         "InitialPosition": {"Latest": 0, "Earliest": 1},
         "PartitionedLookupType": {"Success": 0, "Failed": 1},
         "LookupType": {"Redirect": 0, "Connect": 1, "Failed": 2},
         "AckType": {"Individual": 0, "Cumulative": 1},
         "TopicsMode": {"PERSISTENT": 0, "NON_PERSISTENT": 1, "ALL": 2},
         "ValidationError": {"UncompressedSizeCorruption": 0, "DecompressionError": 1, "ChecksumMismatch": 2,
                             "BatchDeSerializeError": 3, "DecryptionError": 4}}
# (enum values are unique per proto package: prefix the ones that would clash)
_ENUM_VALUE_PREFIX = {"ProducerAccessMode": "ACCESS_", "SubType": "SUB_", "InitialPosition": "POSITION_",
                      "PartitionedLookupType": "PARTITIONED_", "LookupType": "LOOKUP_", "AckType": "ACK_",
                      "ValidationError": "VALIDATION_", "CompressionType": "COMPRESSION_", "TopicsMode": "MODE_"}


def _file() -> descriptor_pb2.FileDescriptorProto:
    f = descriptor_pb2.FileDescriptorProto(name="rocketmq_emulator_pulsar_wire.proto", package=_PACKAGE,
                                           syntax="proto2")
    for name, values in ENUMS.items():
        e = f.enum_type.add(name=name)
        prefix = _ENUM_VALUE_PREFIX.get(name, "")
        for value_name, number in values.items():
            e.value.add(name=prefix + value_name, number=number)
    for name, fields in MESSAGES.items():
        m = f.message_type.add(name=name)
        for number, field_name, kind, *option in fields:
            repeated = option == ["repeated"]
            fd = m.field.add(name=field_name, number=number,
                             label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL)
            if option and option[0].startswith("default="):
                fd.default_value = option[0][len("default="):]
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
MessageMetadata = message("MessageMetadata")
SingleMessageMetadata = message("SingleMessageMetadata")
MessageIdData = message("MessageIdData")
CommandConnect = message("CommandConnect")
CommandConnected = message("CommandConnected")
CommandError = message("CommandError")
CommandPing = message("CommandPing")
CommandPong = message("CommandPong")
FeatureFlags = message("FeatureFlags")


def _numbers(enum: str) -> type:
    """A class whose attributes are an enum's numbers by name."""
    return type(enum, (), dict(ENUMS[enum]))


Type = _numbers("Type")
ServerError = _numbers("ServerError")
SubType = _numbers("SubType")
InitialPosition = _numbers("InitialPosition")
LookupType = _numbers("LookupType")
PartitionedLookupType = _numbers("PartitionedLookupType")
AckType = _numbers("AckType")
ValidationError = _numbers("ValidationError")
CompressionType = _numbers("CompressionType")
TopicsMode = _numbers("TopicsMode")
ProducerAccessMode = _numbers("ProducerAccessMode")
