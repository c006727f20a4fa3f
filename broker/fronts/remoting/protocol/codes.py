"""RocketMQ 4.x request and response codes (RequestCode / ResponseCode)."""
from __future__ import annotations

from enum import IntEnum

__all__ = ["RequestCode", "ResponseCode", "LanguageCode", "SerializeType", "EMULATOR_CLOCK_ADVANCE",
           "EMULATOR_BROKER_CONTROL", "EMULATOR_DLQ", "EMULATOR_GROUPS", "EMULATOR_TRANSACTIONS", "EMULATOR_LITE",
           "EMULATOR_FAULTS"]


class RequestCode(IntEnum):
    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_BROKER_OFFSET = 13
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    GET_BROKER_RUNTIME_INFO = 28
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_PRODUCER_CONNECTION_LIST = 204
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_SUBSCRIPTIONGROUP = 207
    GET_CONSUME_STATS = 208
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    CHECK_CLIENT_CONFIG = 46
    REGISTER_BROKER = 103
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    RESET_CONSUMER_CLIENT_OFFSET = 220
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    GET_CONSUMER_STATUS_FROM_CLIENT = 221
    GET_CONSUMER_RUNNING_INFO = 307
    CONSUME_MESSAGE_DIRECTLY = 309
    SEND_MESSAGE_V2 = 310
    SEND_BATCH_MESSAGE = 320


# The emulator's own clock-control request travels outside RocketMQ's code ranges
# (upstream uses < 1000 and 200000+ in 5.x) so a real client can never send it by accident.
EMULATOR_CLOCK_ADVANCE = 91_001
# The cluster's brokers: list them, switch one's write permission, stop or start one.
EMULATOR_BROKER_CONTROL = 91_002
# A group's dead letters: list them, re-drive them to their topic.
EMULATOR_DLQ = 91_003
# Every consumer group the brokers know, with the client dialects using it (group_views).
EMULATOR_GROUPS = 91_004
# The half messages waiting for their producers (and a topic's 5.x message type).
EMULATOR_TRANSACTIONS = 91_005
# Fault rules (broker/faults/rules.py): add one, list them with their hits, remove one, clear.
EMULATOR_FAULTS = 91_006
# Lite topics (RIP-83): a LITE topic's lite topics, a group's lite subscriptions.
EMULATOR_LITE = 91_051


class ResponseCode(IntEnum):
    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208


class LanguageCode(IntEnum):
    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12
    NODE_JS = 13


class SerializeType(IntEnum):
    JSON = 0
    ROCKETMQ = 1
