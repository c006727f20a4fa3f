"""The core's pull operation (``BrokerCore.pull``): 4.9.8's checks in order, the read,
the piggy-backed commit. No wire format here: the 4.x front (processors/pull.py) maps
the outcome to its response codes and holds a pull that found nothing.

``Pulling`` is given the pieces it reads (the config, the group, topic and consumer
tables, the store, the offset book, the delivery log), not the core; the caller reads the clock."""
from __future__ import annotations

from rocketmq_emulator.store import GetStatus
from rocketmq_emulator.store.record_view import fields
from rocketmq_emulator.store.records import string_to_properties

from ..config import PERM_READ
from .groups import parse_tag_expression
from .sql_filter import SQL92, SqlFilter, SqlFilterError, compile_sql, is_tag_type
from ..operations import FilterCheck, PullOutcome as O, PullRequest, PullResult
from ..views.delivery_log import PULL

__all__ = ["Pulling", "check_filter"]

_FROM_STORE = {
    GetStatus.FOUND: O.FOUND,
    GetStatus.NO_MATCHED_MESSAGE: O.RETRY_IMMEDIATELY,
    GetStatus.MESSAGE_WAS_REMOVING: O.RETRY_IMMEDIATELY,
    GetStatus.OFFSET_FOUND_NULL: O.NO_NEW_MESSAGE,
    GetStatus.OFFSET_OVERFLOW_ONE: O.NO_NEW_MESSAGE,
    GetStatus.OFFSET_OVERFLOW_BADLY: O.OFFSET_MOVED,
    GetStatus.OFFSET_TOO_SMALL: O.OFFSET_MOVED,
}


_FOUND = GetStatus.FOUND
_AT_END = GetStatus.OFFSET_OVERFLOW_ONE


class Pulling:
    def __init__(self, config, groups, topics, consumers, store, offsets, deliveries) -> None:
        self.config = config
        self.groups = groups
        self.topics = topics
        self.consumers = consumers
        self.store = store
        self.offsets = offsets
        self.deliveries = deliveries

    def _refused(self, req: PullRequest, outcome: O, remark: str) -> PullResult:
        store, topic = self.store, req.topic
        return PullResult(outcome, (), 0, store.min_offset(topic, req.queue_id) if topic else 0,
                          store.max_offset(topic, req.queue_id) if topic else 0, remark)


    def check(self, req: PullRequest, channel):
        """4.9.8's checks of a pull, in order: the refusal (a PullResult), or what it reads:
        the tag codes (None: every tag) or a SQL92 subscription's SqlFilter. Cost: dict look-ups (``in`` and ``[]``: it runs twice
        for a pull that waits, and ``get`` would be a call each)."""
        group, topic, queue_id = req.group, req.topic, req.queue_id
        if not self.config.broker_permission & PERM_READ:
            return self._refused(req, O.BROKER_NOT_READABLE, f"the broker[{self.config.broker_ip}] pulling message is forbidden")
        table = self.groups.table
        gc = table[group] if group in table else None
        if gc is None:
            gc = self.groups.find(group)            # (auto-created, when the config says so)
            if gc is None:
                return self._refused(req, O.GROUP_NOT_EXIST, f"subscription group [{group}] does not exist")
        if not gc.consume_enable:
            return self._refused(req, O.GROUP_NOT_CONSUMABLE, f"subscription group no permission, {group}")
        table = self.topics.table
        tc = table[topic] if topic in table else None
        if tc is None:
            return self._refused(req, O.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please!")
        if not tc.perm & PERM_READ:
            return self._refused(req, O.TOPIC_NOT_READABLE, f"the topic[{topic}] pulling message is forbidden")
        if queue_id < 0 or queue_id >= tc.read_queue_nums:
            return self._refused(req, O.QUEUE_ILLEGAL,
                            f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                            f"[{tc.read_queue_nums}] consumer:[{channel.remote}]")
        if req.subscription is not None:
            expression_type = req.expression_type
            if expression_type == "TAG" or not expression_type:     # (is_tag_type, inlined: a call fewer)
                try:
                    _, code_set = parse_tag_expression(req.subscription)
                except ValueError:
                    return self._refused(req, O.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed")
            else:
                # upstream lets a SQL92 that does not compile (or a type it has no filter for)
                # through and filters nothing: ConsumerFilterManager.build answers null and the
                # ExpressionMessageFilter then takes every message (None: every message)
                try:
                    code_set = compile_sql(req.subscription) if expression_type == SQL92 else None
                except SqlFilterError:
                    code_set = None
                if not self.config.enable_property_filter:
                    return self._refused(req, O.FILTER_UNSUPPORTED,
                                         "The broker does not support consumer to filter message by " + expression_type)
                return code_set
        else:
            table = self.consumers.groups
            info = table[group] if group in table else None
            if info is None:
                return self._refused(req, O.SUBSCRIPTION_NOT_EXIST, "the consumer's group info not exist")
            if info.message_model == "BROADCASTING" and not gc.consume_broadcast_enable:
                return self._refused(req, O.BROADCAST_FORBIDDEN,
                                     f"the consumer group[{group}] can not consume by broadcast way")
            table = info.subscriptions
            sub = table[topic] if topic in table else None
            if sub is None:
                return self._refused(req, O.SUBSCRIPTION_NOT_EXIST, "the consumer's subscription not exist")
            if sub.sub_version < req.sub_version:
                return self._refused(req, O.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
            code_set, expression_type = sub.code_set, sub.expression_type
            if expression_type != "TAG":
                code_set = sub.sql
                if code_set is None:
                    return self._refused(req, O.FILTER_DATA_NOT_EXIST,
                                         "The broker's consumer filter data is not exist!Your expression may be wrong!")
        if expression_type != "TAG":
            if not self.config.enable_property_filter or code_set is None:
                return self._refused(req, O.FILTER_UNSUPPORTED,
                                     "The broker does not support consumer to filter message by " + expression_type)
        return code_set


    def pull(self, req: PullRequest, channel, now: int) -> PullResult:
        """``now``: the clock's time (the commit's and the delivery log's). Cost: the
        checks are dict look-ups; the read is ``MessageStore.get_message``."""
        code_set = self.check(req, channel)
        if code_set.__class__ is PullResult:
            return code_set
        if code_set.__class__ is SqlFilter:
            return self._pull_by_sql(req, channel, code_set, now)
        res = self.store.get_message(req.topic, req.queue_id, req.offset, req.max_msgs, code_set)
        status = res.status
        # (the two usual answers first: an enum member as a dict key costs a call to hash it)
        if status is _FOUND:
            outcome, name = O.FOUND, "FOUND"
        elif status is _AT_END:
            outcome, name = O.NO_NEW_MESSAGE, "OFFSET_OVERFLOW_ONE"
        elif status is GetStatus.NO_MESSAGE_IN_QUEUE or status is GetStatus.NO_MATCHED_LOGIC_QUEUE:
            outcome, name = O.OFFSET_MOVED if req.offset != 0 else O.NO_NEW_MESSAGE, status.name
        else:
            outcome, name = _FROM_STORE.get(status, O.NO_NEW_MESSAGE), status.name
        if req.commit_offset is not None:       # (OffsetBook.commit, directly)
            self.offsets.commit(req.group, req.topic, req.queue_id, req.commit_offset, now)
        if outcome is O.FOUND:
            self.deliveries.pulled(now, req.group, req.topic, req.queue_id, req.offset,
                                   res.next_begin_offset, code_set, channel.client_id or channel.remote)
        # positional, in PullResult's field order (outcome, records, next_offset, min_offset,
        # max_offset, remark, tag_codes, store_status): made for every pull
        return PullResult(outcome, res.records if outcome is O.FOUND else (), res.next_begin_offset, res.min_offset,
                          res.max_offset, None, code_set, name)

    def _pull_by_sql(self, req: PullRequest, channel, selector: SqlFilter, now: int) -> PullResult:
        """A SQL92 subscription's pull: the records read are those ``selector`` takes (the
        rest are skipped and counted in the next offset, as upstream's commit-log filter
        skips them; none taken: RETRY_IMMEDIATELY). Each delivery is logged by its offset,
        so the message page shows only what was delivered."""
        res = self.store.get_message(req.topic, req.queue_id, req.offset, req.max_msgs, None)
        taken, offsets = [], []
        for raw in res.records:
            head = fields(raw, 0)
            if selector.matches(string_to_properties(head.properties)):
                taken.append(raw)
                offsets.append(head.queue_offset)
        status = GetStatus.NO_MATCHED_MESSAGE if res.status is _FOUND and not taken else res.status
        if status is GetStatus.NO_MESSAGE_IN_QUEUE or status is GetStatus.NO_MATCHED_LOGIC_QUEUE:
            outcome = O.OFFSET_MOVED if req.offset != 0 else O.NO_NEW_MESSAGE
        else:
            outcome = _FROM_STORE.get(status, O.NO_NEW_MESSAGE)
        if req.commit_offset is not None:
            self.offsets.commit(req.group, req.topic, req.queue_id, req.commit_offset, now)
        client = channel.client_id or channel.remote
        for offset in offsets:
            self.deliveries.one(now, PULL, req.group, req.topic, req.queue_id, offset, None, client)
        return PullResult(outcome, taken, res.next_begin_offset, res.min_offset, res.max_offset, None, selector,
                          status.name)


def check_filter(expression_type: str | None, expression: str | None, enabled: bool):
    """CHECK_CLIENT_CONFIG's decision (ClientManageProcessor#checkClientConfig), a 4.x
    consumer's check at its start: (FilterCheck, remark). A tag subscription is taken;
    another type is refused while ``enabled`` (enablePropertyFilter) is off, else
    compiled (a type other than SQL92 has no compiler: refused as not compiling)."""
    if is_tag_type(expression_type):
        return FilterCheck.ACCEPTED, None
    if not enabled:
        return FilterCheck.UNSUPPORTED, f"The broker does not support consumer to filter message by {expression_type}"
    if expression_type != SQL92:
        return FilterCheck.ILLEGAL, f"no filter of type {expression_type}"
    try:
        compile_sql(expression)
    except SqlFilterError as exc:
        return FilterCheck.ILLEGAL, str(exc)
    return FilterCheck.ACCEPTED, None
