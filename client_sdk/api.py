"""The remoting calls a client makes (RocketMQ's MQClientAPIImpl), over one Transport.

Each method builds the request with the exact 4.x header names, sends it, and maps the
answer: SUCCESS to a value, anything else to ``MQBrokerError(code, remark)``. Pulls are
asynchronous (their replies may be held by long polling); everything else is
synchronous, and offset updates go oneway as the Java client sends them.
"""
from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Callable

from rocketmq_emulator.broker.operations import (ConsumerRegistration, OffsetCommit, PullOutcome, Registration,
                                                 SendBack, SendBackOutcome, SubscriptionData)
from rocketmq_emulator.broker.fronts.remoting.protocol.typed import (FILTER_CHECK_CODES, PULL_CODES,
                                                                     offset_commit_header_of, route_data,
                                                                     send_back_code, send_back_header_of)
from rocketmq_emulator.broker.fronts.remoting.protocol import CURRENT_VERSION, RemotingCommand, RequestCode, ResponseCode
from rocketmq_emulator.broker.fronts.remoting.protocol.fastjson import loads_fastjson

from .errors import MQBrokerError, RemotingError
from .message import MessageQueue
from .route import TopicRoute
from .transport.base import Transport

__all__ = ["BrokerAPI", "PullStatus", "PullResponse", "PULL_FLAG_COMMIT_OFFSET", "PULL_FLAG_SUSPEND",
           "PULL_FLAG_SUBSCRIPTION", "SEND_HEADER_V2", "registration_of"]

PULL_FLAG_COMMIT_OFFSET = 0x1
PULL_FLAG_SUSPEND = 0x2
PULL_FLAG_SUBSCRIPTION = 0x4

# SendMessageRequestHeaderV2 short names (rocketmq-4x.md §2.3, checklist 17-18).
SEND_HEADER_V2 = {"producerGroup": "a", "topic": "b", "defaultTopic": "c", "defaultTopicQueueNums": "d",
                  "queueId": "e", "sysFlag": "f", "bornTimestamp": "g", "flag": "h", "properties": "i",
                  "reconsumeTimes": "j", "unitMode": "k", "maxReconsumeTimes": "l", "batch": "m",
                  "brokerName": "n"}


class PullStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_PULL_STATUS = {ResponseCode.SUCCESS: PullStatus.FOUND, ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
                ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
                ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL}


@dataclass(slots=True)
class PullResponse:
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    body: bytes
    # in process: the records as the broker keeps them, (record, its map as stored)
    # pairs (None: decode ``body``), and ``raw``, their bytes (``body`` is then empty)
    stored: list | tuple | None = None
    raw: list | tuple = ()


_FOUND, _NO_NEW = PullOutcome.FOUND, PullOutcome.NO_NEW_MESSAGE
_RETRYING, _DEAD_LETTERED = SendBackOutcome.RETRYING, SendBackOutcome.DEAD_LETTERED
# a typed pull's outcome -> what the command path reads from the response code
_OUTCOME_STATUS = {PullOutcome.FOUND: PullStatus.FOUND, PullOutcome.NO_NEW_MESSAGE: PullStatus.NO_NEW_MSG,
                   PullOutcome.RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
                   PullOutcome.OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL}


class BrokerAPI:
    """Typed requests over ``transport``. Requests aimed at one broker carry its name
    (``bname``; ``n`` in a send header) so that a transport for a real cluster can
    route them; the in-process core is name server and broker at once."""

    def __init__(self, transport: Transport) -> None:
        self.transport = transport

    def _call(self, code: int, ext: dict | None = None, body: bytes = b"", timeout_ms: int = 3000,
              what: str = "") -> RemotingCommand:
        resp = self.transport.request(RemotingCommand.request(code, ext, body), timeout_ms)
        if resp.code != ResponseCode.SUCCESS:
            raise MQBrokerError(resp.code, resp.remark, None, what or RequestCode(code).name)
        return resp

    # -- name server -------------------------------------------------------------------
    def get_topic_route(self, topic: str, timeout_ms: int = 3000) -> TopicRoute | None:
        """The route, or None when the name server does not know the topic (17)."""
        if self.transport.core() is not None:
            route = self.transport.route(topic)
            return None if route is None else TopicRoute.from_json(topic, route_data(route))
        resp = self.transport.request(RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                                              {"topic": topic}), timeout_ms)
        if resp.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        if resp.code != ResponseCode.SUCCESS:
            raise MQBrokerError(resp.code, resp.remark, None, "GET_ROUTEINFO_BY_TOPIC " + topic)
        # fastjson's dialect: a real name server writes brokerAddrs as {0:"host:port"}.
        return TopicRoute.from_json(topic, loads_fastjson(resp.body))

    # -- producing ---------------------------------------------------------------------
    def send_message_v2(self, ext: dict[str, str], body: bytes, timeout_ms: int) -> RemotingCommand:
        """SEND_MESSAGE_V2 with a ready short-name header (``SEND_HEADER_V2`` maps the
        V1 names); returns the raw response (the producer maps the statuses that are not
        errors). The header values must already be strings, as on the wire."""
        cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, None, body)
        cmd.ext_fields = ext
        return self.transport.request(cmd, timeout_ms)

    def send_message_v2_async(self, ext: dict[str, str], body: bytes, callback: Callable,
                              timeout_ms: int) -> None:
        """SEND_MESSAGE_V2 without waiting; ``callback(response, error)`` on the loop."""
        cmd = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, None, body)
        cmd.ext_fields = ext
        self.transport.request_async(cmd, callback, timeout_ms)

    def send_batch_message(self, ext: dict[str, str], body: bytes, timeout_ms: int) -> RemotingCommand:
        """SEND_BATCH_MESSAGE (320): the V2 header with ``m`` = true and a batch body."""
        cmd = RemotingCommand.request(RequestCode.SEND_BATCH_MESSAGE, None, body)
        cmd.ext_fields = ext
        return self.transport.request(cmd, timeout_ms)

    # -- consuming -----------------------------------------------------------------------
    @staticmethod
    def pull_command(header: dict) -> RemotingCommand:
        return RemotingCommand.request(RequestCode.PULL_MESSAGE, header)

    def pull_message_async(self, header: dict, callback: Callable, timeout_ms: int = 30000) -> int:
        """PULL_MESSAGE; ``callback(PullResponse | None, error | None)`` on the loop.
        Returns the request's opaque."""

        def done(resp, err):
            if err is not None:
                callback(None, err)
                return
            status = _PULL_STATUS.get(resp.code)
            if status is None:
                callback(None, MQBrokerError(resp.code, resp.remark, None, "PULL_MESSAGE"))
                return
            ext = resp.ext_fields or {}
            try:
                pr = PullResponse(status, int(ext["nextBeginOffset"]), int(ext["minOffset"]),
                                  int(ext["maxOffset"]), resp.body)
            except (KeyError, ValueError) as exc:
                callback(None, RemotingError(f"malformed pull response header {ext}: {exc}"))
                return
            callback(pr, None)

        cmd = self.pull_command(header)
        self.transport.request_async(cmd, done, timeout_ms)
        return cmd.opaque

    def pull_typed(self, request, suspend_ms: int, callback: Callable, timeout_ms: int = 30000) -> int:
        """The in-process form of ``pull_message_async`` (the caller asked
        ``transport.core()``): the core's pull of the typed ``request`` (a
        broker.operations.PullRequest), its answer read as a PULL_MESSAGE reply is —
        ``callback(PullResponse | None, error | None)`` on the loop, the records as the
        broker keeps them when it has them. Returns the call's id."""

        def done(result, err):
            if err is not None:
                callback(None, err)
                return
            outcome = result.outcome
            # (the usual answers first: an enum member as a dict key costs a call to hash it)
            if outcome is _FOUND:
                status = PullStatus.FOUND
            elif outcome is _NO_NEW:
                status = PullStatus.NO_NEW_MSG
            else:
                status = _OUTCOME_STATUS.get(outcome)
            if status is None:
                callback(None, MQBrokerError(PULL_CODES[result.outcome], result.remark, None, "PULL_MESSAGE"))
                return
            stored = result.stored
            body = b"" if stored is not None or not result.records else b"".join(result.records)
            callback(PullResponse(status, result.next_offset, result.min_offset, result.max_offset, body, stored,
                                  result.records), None)

        return self.transport.pull(request, suspend_ms, done, timeout_ms)

    def query_consumer_offset(self, group: str, topic: str, queue_id: int, broker_name: str | None = None) -> int:
        core = self.transport.core()
        if core is not None:
            offset = core.committed_offset(group, topic, queue_id)
            if offset is None:
                raise MQBrokerError(ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group "
                                    "consumer boot first", None, "QUERY_CONSUMER_OFFSET")
            return offset
        resp = self._call(RequestCode.QUERY_CONSUMER_OFFSET,
                          {"consumerGroup": group, "topic": topic, "queueId": queue_id, "bname": broker_name})
        return int(resp.header_int("offset"))

    def update_consumer_offset_oneway(self, group: str, topic: str, queue_id: int, offset: int,
                                      broker_name: str | None = None) -> None:
        commit = OffsetCommit(group, topic, queue_id, offset)
        if self.transport.core() is not None:      # oneway: what the broker answers is not read
            self.transport.commit_offset(commit)
            return
        self.transport.oneway(RemotingCommand.request(
            RequestCode.UPDATE_CONSUMER_OFFSET, offset_commit_header_of(commit, broker_name), oneway=True))

    def get_max_offset(self, topic: str, queue_id: int, broker_name: str | None = None) -> int:
        core = self.transport.core()
        if core is not None:
            return core.queue_bounds(topic, queue_id)[1]
        return self._call(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": queue_id,
                                                       "bname": broker_name}).header_int("offset")

    def get_min_offset(self, topic: str, queue_id: int, broker_name: str | None = None) -> int:
        core = self.transport.core()
        if core is not None:
            return core.queue_bounds(topic, queue_id)[0]
        return self._call(RequestCode.GET_MIN_OFFSET, {"topic": topic, "queueId": queue_id,
                                                       "bname": broker_name}).header_int("offset")

    def search_offset(self, topic: str, queue_id: int, timestamp: int, broker_name: str | None = None) -> int:
        core = self.transport.core()
        if core is not None:
            return core.offset_at_time(topic, queue_id, timestamp)
        return self._call(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                          {"topic": topic, "queueId": queue_id, "timestamp": timestamp,
                           "bname": broker_name}).header_int("offset")

    def consumer_send_msg_back(self, *, commit_log_offset: int, group: str, delay_level: int,
                               origin_msg_id: str | None, origin_topic: str, max_reconsume_times: int,
                               broker_name: str | None, timeout_ms: int = 5000) -> None:
        """CONSUMER_SEND_MSG_BACK (ConsumerSendMsgBackRequestHeader; request version >= 121
        so the broker honours maxReconsumeTimes); in process, the core's send_back."""
        request = SendBack(group, commit_log_offset, delay_level, max_reconsume_times, origin_msg_id, origin_topic)
        if self.transport.core() is not None:
            result = self.transport.send_back(request)
            outcome = result.outcome
            if outcome is _RETRYING or outcome is _DEAD_LETTERED:
                return
            code = send_back_code(result)
            if code != ResponseCode.SUCCESS:
                raise MQBrokerError(code, result.remark, None, "CONSUMER_SEND_MSG_BACK")
            return
        self._call(RequestCode.CONSUMER_SEND_MSG_BACK, send_back_header_of(request, broker_name), timeout_ms=timeout_ms)

    # -- membership ------------------------------------------------------------------------
    def heartbeat(self, data: dict) -> None:
        """HEART_BEAT with HeartbeatData (§2.7); in process, the core's register of the
        same data (each subscription read as the broker reads the JSON)."""
        if self.transport.core() is not None:
            self.transport.register(registration_of(data))
            channel = self.transport.channel
            channel.language, channel.version = "PYTHON", CURRENT_VERSION
            return
        self._call(RequestCode.HEART_BEAT, None, json.dumps(data, separators=(",", ":")).encode())

    def check_client_config(self, group: str, client_id: str, subscription: dict) -> None:
        """CHECK_CLIENT_CONFIG: whether the broker takes a SQL92 subscription (its JSON,
        as a heartbeat carries it); MQBrokerError with the broker's code and remark if not."""
        core = self.transport.core()
        if core is not None:
            outcome, remark = core.check_filter(subscription["expressionType"], subscription["subString"])
            self.transport.core_done()
            code = FILTER_CHECK_CODES[outcome]
            if code != ResponseCode.SUCCESS:
                raise MQBrokerError(code, remark, None, "CHECK_CLIENT_CONFIG")
            return
        body = {"clientId": client_id, "group": group, "subscriptionData": subscription}
        self._call(RequestCode.CHECK_CLIENT_CONFIG, None, json.dumps(body, separators=(",", ":")).encode())

    def unregister_client(self, client_id: str, producer_group: str | None = None,
                          consumer_group: str | None = None) -> None:
        core = self.transport.core()
        if core is not None:
            core.unregister(self.transport.channel, producer_group=producer_group or None,
                            consumer_group=consumer_group or None)
            self.transport.core_done()
            return
        self._call(RequestCode.UNREGISTER_CLIENT, {"clientID": client_id, "producerGroup": producer_group,
                                                   "consumerGroup": consumer_group})

    def get_consumer_id_list(self, group: str) -> list[str]:
        core = self.transport.core()
        if core is not None:
            ids = core.consumer_ids(group)
            if ids is None:
                raise MQBrokerError(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}", None,
                                    "GET_CONSUMER_LIST_BY_GROUP")
            return list(ids)
        resp = self._call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": group})
        return list(json.loads(resp.body).get("consumerIdList") or [])

    def lock_batch_mq(self, group: str, client_id: str, mqs) -> set[MessageQueue]:
        core = self.transport.core()
        if core is not None:
            return {MessageQueue(t, b, q) for t, b, q in core.lock_queues(
                group, client_id, [(mq.topic, mq.broker_name, mq.queue_id) for mq in mqs])}
        body = {"consumerGroup": group, "clientId": client_id, "mqSet": [mq.to_json() for mq in mqs]}
        resp = self._call(RequestCode.LOCK_BATCH_MQ, None, json.dumps(body).encode())
        return {MessageQueue(m["topic"], m["brokerName"], int(m["queueId"]))
                for m in json.loads(resp.body).get("lockOKMQSet") or []}

    def unlock_batch_mq(self, group: str, client_id: str, mqs, oneway: bool = False) -> None:
        core = self.transport.core()
        if core is not None:
            core.unlock_queues(group, client_id, [(mq.topic, mq.broker_name, mq.queue_id) for mq in mqs])
            return
        body = json.dumps({"consumerGroup": group, "clientId": client_id,
                           "mqSet": [mq.to_json() for mq in mqs]}).encode()
        if oneway:
            self.transport.oneway(RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, None, body, oneway=True))
        else:
            self._call(RequestCode.UNLOCK_BATCH_MQ, None, body)


def registration_of(data: dict) -> Registration:
    """The core's Registration of HeartbeatData ``data`` (each subscription read as the
    broker reads the JSON)."""
    return Registration(data["clientID"], tuple(
        ConsumerRegistration(cd["groupName"], cd["consumeType"], cd["messageModel"], cd["consumeFromWhere"],
                             tuple(SubscriptionData.from_json(sub) for sub in cd["subscriptionDataSet"]))
        for cd in data["consumerDataSet"]), tuple(pd["groupName"] for pd in data["producerDataSet"]))
