"""A thin request helper over BrokerCore for broker tests: it builds the same
RemotingCommands a RocketMQ client sends (header names as on the wire)."""
from __future__ import annotations

import json

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode as RQ
from rocketmq_emulator.store.records import Prop, iter_records, properties_to_string

from ..support.remoting import front_of


class WireClient:
    def __init__(self, core: BrokerCore, remote: str = "127.0.0.1:50001", client_id: str = "127.0.0.1@test"):
        self.core = core
        self.channel = core.connect(remote)
        self.client_id = client_id
        self.uniq = 0

    def call(self, code, ext=None, body=b"", *, oneway=False, version=409):
        return front_of(self.core).handle(RemotingCommand.request(code, ext, body, oneway=oneway, version=version),
                                          self.channel)

    # -- produce ----------------------------------------------------------------------
    def send(self, topic, body=b"x", *, tags=None, keys=None, delay=None, queue_id=0, props=None,
             reconsume_times=None, max_reconsume_times=None, group="PG", version=409, v2=False, flag=0,
             uniq=True):
        p = {}
        if tags:
            p[Prop.TAGS] = tags
        if keys:
            p[Prop.KEYS] = keys
        if delay is not None:
            p[Prop.DELAY] = str(delay)
        p[Prop.WAIT] = "true"
        if uniq:
            self.uniq += 1
            p[Prop.UNIQ_KEY] = f"7F00000100002A9F00000000{self.uniq:08X}"
        p.update(props or {})
        ext = {"producerGroup": group, "topic": topic, "defaultTopic": "TBW102", "defaultTopicQueueNums": 4,
               "queueId": queue_id, "sysFlag": 0, "bornTimestamp": self.core.clock.now_ms(), "flag": flag,
               "properties": properties_to_string(p), "reconsumeTimes": reconsume_times,
               "maxReconsumeTimes": max_reconsume_times}
        if v2:
            short = dict(zip("abcdefghijl", ["producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums",
                                             "queueId", "sysFlag", "bornTimestamp", "flag", "properties",
                                             "reconsumeTimes", "maxReconsumeTimes"]))
            ext = {k: ext[v] for k, v in short.items()}
            return self.call(RQ.SEND_MESSAGE_V2, ext, body, version=version)
        return self.call(RQ.SEND_MESSAGE, ext, body, version=version)

    # -- consume ----------------------------------------------------------------------
    def heartbeat(self, group, topics=("T",), *, model="CLUSTERING", retry=True, sub="*", sub_version=1,
                  expression_type="TAG"):
        subs = [{"topic": t, "subString": sub, "tagsSet": [], "codeSet": [], "subVersion": sub_version,
                 "expressionType": expression_type, "classFilterMode": False} for t in topics]
        if retry and model == "CLUSTERING":
            subs.append({"topic": "%RETRY%" + group, "subString": "*", "subVersion": sub_version,
                         "expressionType": "TAG"})
        body = {"clientID": self.client_id, "producerDataSet": [{"groupName": "CLIENT_INNER_PRODUCER"}],
                "consumerDataSet": [{"groupName": group, "consumeType": "CONSUME_PASSIVELY",
                                     "messageModel": model, "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
                                     "unitMode": False, "subscriptionDataSet": subs}]}
        return self.call(RQ.HEART_BEAT, None, json.dumps(body).encode())

    def pull(self, group, topic, queue_id=0, offset=0, *, max_msgs=32, sys_flag=0, commit_offset=0,
             suspend_ms=15000, sub_version=0, subscription=None, expression_type=None):
        ext = {"consumerGroup": group, "topic": topic, "queueId": queue_id, "queueOffset": offset,
               "maxMsgNums": max_msgs, "sysFlag": sys_flag, "commitOffset": commit_offset,
               "suspendTimeoutMillis": suspend_ms, "subVersion": sub_version, "subscription": subscription,
               "expressionType": expression_type}
        return self.call(RQ.PULL_MESSAGE, ext)

    def pull_records(self, group, topic, queue_id=0, offset=0, **kw):
        resp = self.pull(group, topic, queue_id, offset, **kw)
        assert resp is not None and resp.code == 0, resp
        return list(iter_records(resp.body, check_crc=True))

    def send_back(self, offset, group, delay_level=0, *, max_reconsume_times=None, origin_msg_id=None,
                  origin_topic=None, version=409):
        ext = {"offset": offset, "group": group, "delayLevel": delay_level, "originMsgId": origin_msg_id,
               "originTopic": origin_topic, "maxReconsumeTimes": max_reconsume_times}
        return self.call(RQ.CONSUMER_SEND_MSG_BACK, ext, version=version)


def read_topic(core: BrokerCore, topic: str, queue_id: int = 0):
    """Every record of a queue, decoded (straight from the store)."""
    out, off = [], core.store.min_offset(topic, queue_id)
    while True:
        res = core.store.get_message(topic, queue_id, off, 1000, None)
        if not res.records:
            return out
        for raw in res.records:
            out.extend(iter_records(raw, check_crc=True))
        off = res.next_begin_offset
