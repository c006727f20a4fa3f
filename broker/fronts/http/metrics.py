"""Prometheus metrics of a running broker (or cluster), read from the cores when scraped.

A ``prometheus_client`` collector: nothing is counted on the hot path; each scrape reads
what the store and the core already keep (queue offsets, committed offsets, the delay
scheduler's pending entries, held pulls). Labels: ``broker`` everywhere, then ``topic``
(a Pulsar topic by its Pulsar name, persistent://...) and ``group``. Metric names start with ``rocketmq_emulator_``:

  topic_messages_total{topic}            messages stored in a business topic's queues
  group_consumed_total{group,topic}      committed offsets summed over the topic's queues
  group_lag{group,topic}                 messages stored and not committed yet
  group_retry_messages_total{group}      messages that reached %RETRY%<group> (retries due)
  group_dead_letters_total{group}        a group's dead letters (%DLQ%<group>, its Pulsar DLQ topics)
  delay_queue_depth{level}               messages waiting for a delay level (SCHEDULE_TOPIC_XXXX)
  held_pulls                             long-poll pulls waiting for a message
  lite_topics{topic}                     a LITE topic's lite topics (RIP-83; each stored as
                                         its own %LMQ%<topic>%<lite> queue, in the series above too)
  lite_subscriptions{group}              a group's lite subscriptions: (client, lite topic) pairs
  connections                            client connections (remoting)
  clock_milliseconds                     the broker's clock (virtual or real)
  up                                     1 while the broker runs, 0 while stopped
  store_writable                         1 while a running broker's store takes writes, 0 while it
                                         refuses them (a full disk; store.write_refusal)
  produced_per_second{topic}             the core's rates (broker/views/rates.py), each the mean over the
  consumed_per_second{group,topic}       last RATE_WINDOW_S seconds of the broker's clock: messages
  retried_per_second{group,topic}        stored, committed offsets moved, failed deliveries given
  dead_lettered_per_second{group,topic}  another try, dead letters stored

Fault rules (issue 38; FaultCollector, registered beside it by the HTTP front):

  faults_applied_total{rule,operation,action}   faults a rule applied (its FAULT events since
                                         the front started; kept after the rule is gone)
  faults_applied_all_rules_total         faults applied by any rule (core.fault_figures())
  fault_rules                            rules installed now that can still fire (not spent ones)
"""
from __future__ import annotations

from typing import Callable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from rocketmq_emulator.store.records import DLQ_PREFIX, RETRY_PREFIX, SCHEDULE_TOPIC, SYSTEM_TOPICS

from ...events import EventKind
from ...facade.across import CONSUMED, DEAD_LETTERED, PRODUCED, RETRIED
from ...faults.rules import fault_of
from ...pulsar_model.names import shown_topic

__all__ = ["BrokerCollector", "FaultCollector", "PREFIX", "RATE_WINDOW_S"]

PREFIX = "rocketmq_emulator_"
RATE_WINDOW_S = 10


def _business(topic: str) -> bool:
    return not (topic.startswith((RETRY_PREFIX, DLQ_PREFIX, "rmq_sys_", "RMQ_SYS_")) or topic in SYSTEM_TOPICS)


class BrokerCollector:
    """``cores()``: the broker cores to report (every member of a cluster, up or not);
    ``connections(core)``: its open client connections (None: not reported)."""

    def __init__(self, cores: Callable[[], list], connections: Callable[[object], int | None] = lambda c: None):
        self.cores = cores
        self.connections = connections

    def describe(self):
        return []           # no fixed set: the metrics follow the topics and groups there are

    def collect(self):
        m = {
            "topic": CounterMetricFamily(PREFIX + "topic_messages", "Messages stored in a business topic",
                                         labels=["broker", "topic"]),
            "consumed": CounterMetricFamily(PREFIX + "group_consumed", "Committed offsets of a group in a topic",
                                            labels=["broker", "group", "topic"]),
            "lag": GaugeMetricFamily(PREFIX + "group_lag", "Messages stored and not committed by the group",
                                     labels=["broker", "group", "topic"]),
            "retry": CounterMetricFamily(PREFIX + "group_retry_messages", "Messages that reached %RETRY%<group>",
                                         labels=["broker", "group"]),
            "dead": CounterMetricFamily(PREFIX + "group_dead_letters", "A group's dead letters (%DLQ%<group> and its Pulsar dead-letter topics)",
                                        labels=["broker", "group"]),
            "delay": GaugeMetricFamily(PREFIX + "delay_queue_depth", "Messages waiting for a delay level",
                                       labels=["broker", "level"]),
            "held": GaugeMetricFamily(PREFIX + "held_pulls", "Long-poll pulls waiting", labels=["broker"]),
            "lite": GaugeMetricFamily(PREFIX + "lite_topics", "A LITE topic's lite topics", labels=["broker", "topic"]),
            "lite_subs": GaugeMetricFamily(PREFIX + "lite_subscriptions", "A group's lite subscriptions ((client, "
                                           "lite topic) pairs)", labels=["broker", "group"]),
            "conns": GaugeMetricFamily(PREFIX + "connections", "Client connections", labels=["broker"]),
            "clock": GaugeMetricFamily(PREFIX + "clock_milliseconds", "The broker's clock", labels=["broker"]),
            "up": GaugeMetricFamily(PREFIX + "up", "1 while the broker runs", labels=["broker"]),
            "writable": GaugeMetricFamily(PREFIX + "store_writable", "1 while the store takes writes, 0 while it "
                                          "refuses them (a full disk)", labels=["broker"]),
            PRODUCED: GaugeMetricFamily(PREFIX + "produced_per_second", f"Messages stored per second (mean of the "
                                        f"last {RATE_WINDOW_S} s)", labels=["broker", "topic"]),
            CONSUMED: GaugeMetricFamily(PREFIX + "consumed_per_second", f"Committed offsets moved per second (mean "
                                        f"of the last {RATE_WINDOW_S} s)", labels=["broker", "group", "topic"]),
            RETRIED: GaugeMetricFamily(PREFIX + "retried_per_second", f"Failed deliveries given another try per "
                                       f"second (mean of the last {RATE_WINDOW_S} s)", labels=["broker", "group", "topic"]),
            DEAD_LETTERED: GaugeMetricFamily(PREFIX + "dead_lettered_per_second", f"Dead letters stored per second "
                                             f"(mean of the last {RATE_WINDOW_S} s)", labels=["broker", "group", "topic"]),
        }
        for core in self.cores():
            self._one(core, m)
        return list(m.values())

    def _one(self, core, m: dict) -> None:
        b = core.config.broker_name
        queues = core.stored_queues()

        def stored(topic: str) -> int:
            return core.stored_message_count(topic, queues)

        for topic in sorted(queues):
            if topic.startswith(RETRY_PREFIX):
                m["retry"].add_metric([b, topic[len(RETRY_PREFIX):]], stored(topic))
            elif topic != SCHEDULE_TOPIC and _business(topic):
                m["topic"].add_metric([b, shown_topic(topic)], stored(topic))
        # one count of a group's dead letters, as group show and dlq list have it:
        # %DLQ%<group> and its Pulsar dead-letter topics
        for group, n in sorted(core.dead_letter_counts().items()):
            m["dead"].add_metric([b, group], n)
        for group, topic, committed, lag in core.group_progress():
            if not _business(topic) or topic == SCHEDULE_TOPIC:
                continue
            m["consumed"].add_metric([b, group, shown_topic(topic)], committed)
            m["lag"].add_metric([b, group, shown_topic(topic)], lag)
        for level in range(1, core.delay_level_count + 1):
            m["delay"].add_metric([b, str(level)], core.delayed_waiting(level))
        m["held"].add_metric([b], core.held_pull_count())
        parents, groups = core.lite_census()
        for topic, n in sorted(parents.items()):
            m["lite"].add_metric([b, topic], n)
        for group, n in sorted(groups.items()):
            m["lite_subs"].add_metric([b, group], n)
        conns = self.connections(core)
        if conns is not None:
            m["conns"].add_metric([b], conns)
        m["clock"].add_metric([b], core.clock.now_ms())
        m["up"].add_metric([b], 0 if core.stopped else 1)
        if not core.stopped:
            m["writable"].add_metric([b], 0 if core.write_refusal() is not None else 1)
            _, series = core.rate_window(core.clock.now_ms(), RATE_WINDOW_S)
            for (kind, group, topic), counts in sorted(series.items()):
                labels = [b, shown_topic(topic)] if kind == PRODUCED else [b, group, shown_topic(topic)]
                m[kind].add_metric(labels, sum(counts) / RATE_WINDOW_S)


class FaultCollector:
    """Applied faults per rule of ``cores`` (every member of the cluster): it takes each
    broker's FAULT events as they happen (a fault is rare: no hot path pays for this), as
    a rule is removed when its count is used up — often by the very fault that fired it.
    ``close()`` stops taking them."""

    def __init__(self, cores: list) -> None:
        self.cores = list(cores)
        self._applied: dict[tuple[str, str, str, str], int] = {}    # (broker, rule, operation, action) -> n
        self._stops = [core.subscribe_events(self._taker(core.config.broker_name), kinds=(EventKind.FAULT,))
                       for core in self.cores]

    def _taker(self, broker: str):
        def take(event) -> None:
            fault = fault_of(event)
            if fault is not None:
                key = (broker, str(fault["rule"]), fault["operation"], fault["action"])
                self._applied[key] = self._applied.get(key, 0) + 1
        return take

    def close(self) -> None:
        for stop in self._stops:
            stop()
        self._stops = []

    def describe(self):
        return []

    def collect(self):
        per_rule = CounterMetricFamily(PREFIX + "faults_applied", "Faults a fault rule applied",
                                       labels=["broker", "rule", "operation", "action"])
        for (broker, rule, op, action), n in sorted(self._applied.items(), key=lambda kv: (kv[0][0], int(kv[0][1]))):
            per_rule.add_metric([broker, rule, op, action], n)
        total = CounterMetricFamily(PREFIX + "faults_applied_all_rules", "Faults applied by any fault rule",
                                    labels=["broker"])
        rules = GaugeMetricFamily(PREFIX + "fault_rules", "Fault rules installed", labels=["broker"])
        for core in self.cores:
            applied, installed = core.fault_figures()
            total.add_metric([core.config.broker_name], applied)
            rules.add_metric([core.config.broker_name], installed)
        return [per_rule, total, rules]
