"""The admin operations of ``rocketmq-emulator``'s CLI as Python methods, on RemoteBroker
and EmbeddedBroker alike (``AdminOperations``): the same requests mqadmin sends
(206, 202, 208, 203, 204, 222, 33, 12, 215/216, 28), each aimed at its broker by name
(``bname``) so the transport routes it there, in process or over TCP.

    remote.topics()                           ["Orders", ...]
    remote.groups()                           {"billing": {"retryMaxTimes": 16, ...}, ...}
    remote.topic_stats("Orders")              [{"broker", "queue_id", "min_offset", "max_offset", "last_update_ms"}]
    remote.consume_stats("billing")           [{"broker", "topic", "queue_id", "broker_offset",
                                                "consumer_offset", "lag"}]
    remote.consumer_connections("billing")    {"connections": [...], "subscriptions": {...}, ...}
    remote.reset_offset("billing", "Orders", 0)   earliest (-1: latest, else a time in ms)
    remote.view_message(msg_id)               MessageExt (a message id or an offsetMsgId)
    remote.find_messages("Orders", "order-42")
    remote.delete_topic("Scratch")
    remote.broker_status()                    {"broker-a": {...}, ...}
    remote.half_messages("Orders")            [{"transaction_id", "topic", "producer_group", "stored_ms",
                                                "checks", "next_check_ms", "broker", ...}]

A refusal is an MQBrokerError with the broker's code and line.
"""
from __future__ import annotations

import json

from rocketmq_emulator.broker.fronts.remoting.protocol import (EMULATOR_TRANSACTIONS, RemotingCommand, RequestCode as RQ,
                                                               ResponseCode as RC)
from rocketmq_emulator.broker.fronts.remoting.protocol.fastjson import queue_table
from rocketmq_emulator.broker.fronts.remoting.protocol.message_ids import (not_found_text, offset_id_target, original_and_copies,
                                                           unique_key_query)
from rocketmq_emulator.store.records import decode_record, iter_records

from .errors import MQBrokerError
from .message import MessageExt

__all__ = ["AdminOperations"]


class AdminOperations:
    """Mixed into a Connector: ``connect()`` gives the transport the requests go over."""

    _admin_transport = None

    def _transport(self):
        t = self._admin_transport
        if t is None or t.closed:
            t = self._admin_transport = self.connect()
        return t

    def _call(self, code: int, fields: dict | None = None, broker: str | None = None, *, ok=(RC.SUCCESS,),
              what: str = "") -> RemotingCommand:
        fields = dict(fields or {})
        if broker is not None:
            fields["bname"] = broker
        reply = self._transport().request(RemotingCommand.request(code, fields), 10_000)
        if reply.code not in ok:
            raise MQBrokerError(reply.code, reply.remark, broker, what or RQ(code).name)
        return reply

    def broker_addresses(self) -> dict[str, str]:
        """{broker name: address} of the brokers up (GET_BROKER_CLUSTER_INFO)."""
        table = json.loads(self._call(RQ.GET_BROKER_CLUSTER_INFO).body)["brokerAddrTable"]
        return {name: data["brokerAddrs"]["0"] for name, data in sorted(table.items())}

    def topics(self) -> list[str]:
        return sorted(json.loads(self._call(RQ.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body)["topicList"])

    def groups(self) -> dict[str, dict]:
        """Every subscription group of the brokers: {group: its config (retryMaxTimes, ...)}."""
        out: dict[str, dict] = {}
        for broker in self.broker_addresses():
            table = json.loads(self._call(RQ.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, {}, broker).body)
            for name, conf in table["subscriptionGroupTable"].items():
                out.setdefault(name, conf)
        return dict(sorted(out.items()))

    def half_messages(self, topic: str | None = None) -> list[dict]:
        """The transactions' half messages waiting for their producer (of ``topic`` only,
        when given), oldest first: their id, topic, producer group, store time, the
        checks made and when the next is due (EMULATOR_TRANSACTIONS)."""
        reply = self._call(EMULATOR_TRANSACTIONS, {"topic": topic} if topic else {}, what="half messages")
        return json.loads(reply.body)["half_messages"]

    def topic_stats(self, topic: str) -> list[dict]:
        rows = []
        for broker in self.broker_addresses():
            reply = self._call(RQ.GET_TOPIC_STATS_INFO, {"topic": topic}, broker)
            rows += [{"broker": b, "queue_id": q, "min_offset": v["minOffset"], "max_offset": v["maxOffset"],
                      "last_update_ms": v["lastUpdateTimestamp"]} for (_, b, q), v in queue_table(reply.body)]
        return rows

    def consume_stats(self, group: str, topic: str | None = None) -> list[dict]:
        rows = []
        for broker in self.broker_addresses():
            fields = {"consumerGroup": group, **({"topic": topic} if topic else {})}
            reply = self._call(RQ.GET_CONSUME_STATS, fields, broker)
            rows += [{"broker": b, "topic": t, "queue_id": q, "broker_offset": v["brokerOffset"],
                      "consumer_offset": v["consumerOffset"], "lag": max(v["brokerOffset"] - v["consumerOffset"], 0)}
                     for (t, b, q), v in queue_table(reply.body)]
        return rows

    def consumer_connections(self, group: str) -> dict:
        """The group's connections and subscriptions (from the first broker it is online on)."""
        last = None
        for broker in self.broker_addresses():
            reply = self._call(RQ.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group}, broker,
                               ok=(RC.SUCCESS, RC.CONSUMER_NOT_ONLINE))
            if reply.code == RC.SUCCESS:
                doc = json.loads(reply.body)
                return {"connections": doc["connectionSet"], "subscriptions": doc["subscriptionTable"],
                        "consume_type": doc["consumeType"], "message_model": doc["messageModel"],
                        "consume_from_where": doc["consumeFromWhere"]}
            last = reply
        raise MQBrokerError(last.code if last else RC.CONSUMER_NOT_ONLINE,
                            last.remark if last else f"the consumer group[{group}] not online", None,
                            "GET_CONSUMER_CONNECTION_LIST")

    def reset_offset(self, group: str, topic: str, timestamp_ms: int) -> list[dict]:
        """Move ``group``'s offsets of ``topic`` to ``timestamp_ms`` (0: the start, -1: the
        end). Online consumers are told and move there; with none online the offsets are
        set on the brokers (what `offset reset` does)."""
        rows = []
        for broker in self.broker_addresses():
            reply = self._call(RQ.INVOKE_BROKER_TO_RESET_OFFSET, {"topic": topic, "group": group,
                                                                  "timestamp": timestamp_ms, "isForce": True},
                               broker, ok=(RC.SUCCESS, RC.CONSUMER_NOT_ONLINE))
            if reply.code == RC.SUCCESS:
                rows += [{"broker": broker, "queue_id": q, "offset": int(v)}
                         for (_, _, q), v in queue_table(reply.body)]
                continue
            for q in [r for r in self.topic_stats(topic) if r["broker"] == broker]:
                if timestamp_ms in (0, -1):
                    offset = q["min_offset"] if timestamp_ms == 0 else q["max_offset"]
                else:
                    offset = self._call(RQ.SEARCH_OFFSET_BY_TIMESTAMP, {
                        "topic": topic, "queueId": q["queue_id"], "timestamp": timestamp_ms}, broker).header_int(
                        "offset")
                self._call(RQ.UPDATE_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic,
                                                       "queueId": q["queue_id"], "commitOffset": offset}, broker)
                rows.append({"broker": broker, "queue_id": q["queue_id"], "offset": offset})
        return sorted(rows, key=lambda r: (r["broker"], r["queue_id"]))

    def view_message(self, msg_id: str) -> MessageExt:
        """The message an id names, as mqadmin queryMsgById finds it: the offsetMsgId of a
        broker here is read at its offset, any other id is looked up as a message id
        (UNIQ_KEY) in every topic of every broker; of a retried message, the original."""
        brokers = self.broker_addresses()
        target = offset_id_target(msg_id, brokers)
        if target is not None:
            reply = self._call(RQ.VIEW_MESSAGE_BY_ID, {"offset": target[1]}, target[0], ok=(RC.SUCCESS, RC.SYSTEM_ERROR))
            if reply.code == RC.SUCCESS:
                return MessageExt.adopt(decode_record(reply.body, check_crc=False))
        found = []
        for broker in brokers:
            for topic in self.topics():
                query = unique_key_query(topic, msg_id)
                reply = self._call(RQ.QUERY_MESSAGE, query.ext_fields, broker,
                                   ok=(RC.SUCCESS, RC.QUERY_NOT_FOUND, RC.TOPIC_NOT_EXIST))
                if reply.code == RC.SUCCESS:
                    found += iter_records(reply.body, check_crc=False)
        original, _copies = original_and_copies(found, msg_id)
        if original is None:
            raise MQBrokerError(RC.QUERY_NOT_FOUND, not_found_text(msg_id), None, "QUERY_MESSAGE")
        return MessageExt.adopt(original)

    def find_messages(self, topic: str, key: str, max_num: int = 64) -> list[MessageExt]:
        found = []
        for broker in self.broker_addresses():
            reply = self._call(RQ.QUERY_MESSAGE, {"topic": topic, "key": key, "maxNum": max_num,
                                                  "beginTimestamp": 0, "endTimestamp": 2 ** 62}, broker,
                               ok=(RC.SUCCESS, RC.QUERY_NOT_FOUND))
            if reply.code == RC.SUCCESS:
                found += [MessageExt.adopt(r) for r in iter_records(reply.body, check_crc=False)]
        return sorted(found, key=lambda m: m.store_timestamp)

    def delete_topic(self, topic: str) -> list[str]:
        """Delete ``topic`` on every broker; returns the brokers it was deleted on."""
        done = []
        for broker in self.broker_addresses():
            self._call(RQ.DELETE_TOPIC_IN_BROKER, {"topic": topic}, broker)
            done.append(broker)
        self._call(RQ.DELETE_TOPIC_IN_NAMESRV, {"topic": topic})
        return done

    def broker_status(self) -> dict[str, dict[str, str]]:
        return {broker: json.loads(self._call(RQ.GET_BROKER_RUNTIME_INFO, {}, broker).body)["table"]
                for broker in self.broker_addresses()}
