"""Store topics that belong to one client dialect, and the rules that keep them its own
(issue 34, item 7).

A Pulsar topic is kept in the store topic ``pulsar|<tenant>|<namespace>|<name>``
(pulsar_names.py), one queue, and a partitioned topic in one such topic per
partition, ``<name>-partition-<i>``; the Pulsar front answers a topic's partition count
from the partitions it finds. A RocketMQ client may send to or read such a topic once it
exists (the dialects share the store), but never creates one: a 4.x producer's send
would create it with the template's 4 queues, a 5.x client's route query with 8, and
Pulsar consumers would then read one queue of them. The admin paths that create one
(UPDATE_AND_CREATE_TOPIC, BrokerCore.create_topic) are held to what Pulsar's metadata
needs: one queue, partitions 0..N-1 made in order, and a name either partitioned or
not — never both, as Pulsar refuses.
"""
from __future__ import annotations

import re

from .errors import RequestRefused

__all__ = ["PULSAR_STORE_PREFIX", "is_pulsar_store_topic", "check_pulsar_store_topic", "NOT_CREATED_BY_ROCKETMQ"]

PULSAR_STORE_PREFIX = "pulsar|"
_PARTITION = re.compile(r"^(.*)-partition-(\d+)$")
NOT_CREATED_BY_ROCKETMQ = ("it is a Pulsar topic's store name, which a RocketMQ client does not create: make it "
                           "with `rocketmq-emulator topic create NAME --pulsar [--partitions N]` or a Pulsar producer")


def is_pulsar_store_topic(topic: str) -> bool:
    return topic.startswith(PULSAR_STORE_PREFIX)


def check_pulsar_store_topic(table, topic: str, read_queue_nums: int, write_queue_nums: int) -> None:
    """Raise RequestRefused (nothing changed) when creating or changing ``topic`` with
    these queue counts would leave ``table`` (name -> config) with Pulsar metadata a
    Pulsar client would misread. Names of other dialects pass."""
    if not is_pulsar_store_topic(topic):
        return
    if read_queue_nums != 1 or write_queue_nums != 1:
        raise RequestRefused(f"the topic[{topic}] is a Pulsar topic's store name: it has one queue (each partition "
                             f"is a topic of its own), not {read_queue_nums} read / {write_queue_nums} write queues")
    m = _PARTITION.match(topic)
    if m is not None:
        base, index = m.group(1), int(m.group(2))
        if base in table:
            raise RequestRefused(f"the topic[{base}] is a Pulsar topic that is not partitioned: it cannot have "
                                 f"partitions (Pulsar refuses a name that is both)")
        if index > 0 and f"{base}-partition-{index - 1}" not in table:
            raise RequestRefused(f"the topic[{topic}] would leave a gap: create partition {index - 1} first "
                                 f"(`rocketmq-emulator topic create NAME --pulsar --partitions N` creates them in order)")
    elif any(name.startswith(topic + "-partition-") for name in table):
        raise RequestRefused(f"the topic[{topic}] is a partitioned Pulsar topic: it cannot also be a topic of its own "
                             f"(Pulsar refuses a name that is both)")
