"""Topic routes (TopicRouteData from GET_ROUTEINFO_BY_TOPIC) turned into queue lists.

Publishing uses the write queues of every broker whose queue data has the write
permission (``topicRouteData2TopicPublishInfo``); subscribing uses the read queues of
those with the read permission. A broker with brokerPermission 4 (read only) masks
the write bit out of its routes, so producers see no queue to send to.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .message import MessageQueue

__all__ = ["TopicRoute", "PERM_READ", "PERM_WRITE", "PERM_INHERIT"]

PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1


@dataclass(frozen=True, slots=True)
class TopicRoute:
    topic: str
    queue_datas: tuple[dict, ...]
    broker_addrs: dict[str, str]            # brokerName -> master address
    order_topic_conf: str | None = None
    publish_queues: tuple[MessageQueue, ...] = field(default=())
    subscribe_queues: tuple[MessageQueue, ...] = field(default=())

    @classmethod
    def from_json(cls, topic: str, data: dict) -> "TopicRoute":
        addrs: dict[str, str] = {}
        for bd in data.get("brokerDatas") or []:
            master = (bd.get("brokerAddrs") or {}).get("0")
            if master:
                addrs[bd["brokerName"]] = master
        qds = tuple(sorted(data.get("queueDatas") or [], key=lambda q: q.get("brokerName", "")))
        pub, sub = [], []
        for qd in qds:
            bn = qd["brokerName"]
            perm = int(qd.get("perm", 6))
            if perm & PERM_WRITE and bn in addrs:
                pub += [MessageQueue(topic, bn, i) for i in range(int(qd.get("writeQueueNums", 0)))]
            if perm & PERM_READ:
                sub += [MessageQueue(topic, bn, i) for i in range(int(qd.get("readQueueNums", 0)))]
        return cls(topic, qds, addrs, data.get("orderTopicConf"), tuple(pub), tuple(sub))

    def with_topic(self, topic: str, queue_nums: int) -> "TopicRoute":
        """The TBW102 template route re-labelled for a topic the broker will auto-create,
        with at most ``queue_nums`` (defaultTopicQueueNums) queues per broker."""
        qds = tuple(dict(qd, readQueueNums=min(queue_nums, int(qd.get("readQueueNums", 0))),
                         writeQueueNums=min(queue_nums, int(qd.get("writeQueueNums", 0))))
                    for qd in self.queue_datas)
        return TopicRoute.from_json(topic, {
            "queueDatas": list(qds), "orderTopicConf": None,
            "brokerDatas": [{"brokerName": b, "brokerAddrs": {"0": a}} for b, a in self.broker_addrs.items()]})
