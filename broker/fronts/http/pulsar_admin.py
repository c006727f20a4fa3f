"""Pulsar's admin REST API and HTTP lookups on the HTTP front (issue 41, items 1 and 2): what
a Pulsar standalone serves on its web port 8080, the part Pulsar users' test setups and
clients use. Requests are read into the core's typed calls (broker/facade/pulsar_admin.py,
behind them pulsar_model/admin.py and topics.py); answers are Pulsar's JSON and status codes: 204 for a change,
200 with JSON for a read, errors as ``{"reason": "..."}`` with 404 (no such topic,
subscription, namespace, tenant), 409 (it exists already), 412 (refused: clients
connected, a bad name), 406 (a partition count below 1 or over pulsar_model/topics.MAX_PARTITIONS),
400 (a body that is not what the path takes: a number past the Java int or long Pulsar
reads it into is one). The dashboard's access rules apply unchanged (guard.py): Host,
token, Origin; a change whose body is not JSON is 415, as Pulsar's JAX-RS resources
answer.

Paths (``{t}/{ns}/{topic}`` of a persistent topic; the Pulsar front serves the core of
broker-a):

  GET    /admin/v2/clusters | /admin/v2/tenants | /admin/v2/tenants/{t}     PUT/DELETE a tenant
  GET    /admin/v2/namespaces/{t}      PUT/DELETE /admin/v2/namespaces/{t}/{ns}
  GET    /admin/v2/namespaces/{t}/{ns}/topics
  POST/GET/DELETE /admin/v2/namespaces/{t}/{ns}/deduplication         (true / false)
  POST/GET/DELETE /admin/v2/namespaces/{t}/{ns}/retention             (kept, answered, not applied)
  PUT/GET/DELETE  /admin/v2/namespaces/{t}/{ns}/compactionThreshold   (bytes)
  GET    /admin/v2/persistent/{t}/{ns}                 topics, partitions one by one
  GET    /admin/v2/persistent/{t}/{ns}/partitioned     partitioned topics
  PUT    /admin/v2/persistent/{t}/{ns}/{topic}         a non-partitioned topic; DELETE (?force=true)
  PUT    .../{topic}/partitions (N)   POST .../partitions (more)   GET   DELETE (?force=true)
  GET    .../{topic}/stats | partitioned-stats | internalStats | lastMessageId
  GET    .../{topic}/subscriptions    PUT/DELETE .../subscription/{sub} (at a message id, latest by default)
  POST   .../subscription/{sub}/skip/{n} | skip_all | resetcursor/{timestamp} | resetcursor (a message id)
  PUT/GET .../{topic}/compaction       POST/GET/DELETE .../deduplicationEnabled | compactionThreshold
  GET    /lookup/v2/topic/persistent/{t}/{ns}/{topic}  the broker's pulsar:// URL (?listenerName=, or
                                                       the X-Pulsar-ListenerName header); non-persistent/ too

Non-persistent topics (issue 51; nothing stored, so no backlog, cursors or compaction):
  GET    /admin/v2/non-persistent/{t}/{ns}             the loaded topics, partitions one by one
  GET    /admin/v2/non-persistent/{t}/{ns}/partitioned partitioned topics
  PUT    /admin/v2/non-persistent/{t}/{ns}/{topic}/partitions (N)   GET   DELETE (?force=true)
  PUT    /admin/v2/non-persistent/{t}/{ns}/{topic}     DELETE (?force=true)   GET .../internalStats
  GET    .../{topic}/stats | partitioned-stats         counters in and out, drops, publishers, subscriptions
  GET    /admin/v2/namespaces/{t}/{ns}/topics?mode=NON_PERSISTENT | ALL
"""
from __future__ import annotations

import json
import time
from typing import Callable

from aiohttp import web

from ...facade.pulsar_admin import EARLIEST, LATEST
from ...pulsar_model.names import (
    PulsarNameError,
    PulsarTopic,
    checked_topic,
    creatable,
    ledger_id,
    parse_topic,
    store_topic,
    subscription_of,
)
from ...pulsar_model.topics import PulsarAdminError
from .guard import MAX_BODY

__all__ = ["PulsarAdmin", "ADMIN_PREFIXES"]

ADMIN_PREFIXES = ("/admin/", "/lookup/")
_STATUS = {"conflict": 409, "not_found": 404, "precondition": 412, "not_acceptable": 406, "bad_request": 400}
_LONG_MAX = (1 << 63) - 1
_JAVA_TYPE = {32: "int", 64: "long"}
_T = "{tenant}/{namespace}"
_TOPIC = "/admin/v2/persistent/{tenant}/{namespace}/{topic}"
_LIVE = "/admin/v2/non-persistent/{tenant}/{namespace}"


def _reason(status: int, message: str) -> web.Response:
    return web.json_response({"reason": message}, status=status)


def _no_content() -> web.Response:
    return web.Response(status=204)


async def _json(request: web.Request, default=None):
    """The request's JSON body, any JSON value (Pulsar's bodies are numbers, booleans and
    objects); ``default`` when there is none."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise web.HTTPRequestEntityTooLarge(max_size=MAX_BODY, actual_size=request.content_length)
    raw = await request.read()
    if not raw.strip():
        return default
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise _Refused(400, "the body is not JSON") from None


def _int(value, what: str, bits: int = 64) -> int:
    """A whole number as Jackson reads one into a Java long (``bits`` 64) or int (32): a
    JSON number or its digits in a string; one past the type is refused (400), as
    Jackson refuses it before Pulsar's resource sees it."""
    if isinstance(value, bool) or value is None:
        raise _Refused(400, f"{what} must be a number")
    if isinstance(value, int):
        n = value
    elif isinstance(value, float) and value.is_integer():
        n = int(value)
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit():
        try:
            n = int(value.strip())
        except ValueError:              # (past Python's 4,300 digits)
            raise _Refused(400, f"{what} has too many digits") from None
    else:
        raise _Refused(400, f"{what} must be a number, not {json.dumps(value)[:40]}")
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not low <= n <= high:
        raise _Refused(400, f"{what} must fit in a Java {_JAVA_TYPE[bits]} ({low} to {high}), not {str(n)[:40]}")
    return n


def _bool(value, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _Refused(400, f"{what} must be true or false")


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").strip().lower() == "true"


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _position(id_, ledger_of: Callable[[], int]) -> tuple[str | int, int]:
    """A MessageId / ResetCursorData body (``ledgerId``, ``entryId``): latest, earliest or
    an offset of ours. Returns (where, batch index)."""
    if not isinstance(id_, dict):
        raise _Refused(400, "a message id is an object with ledgerId and entryId")
    ledger, entry = _int(id_.get("ledgerId", _LONG_MAX), "ledgerId"), _int(id_.get("entryId", _LONG_MAX), "entryId")
    batch = _int(id_.get("batchIndex", -1), "batchIndex", bits=32)
    if ledger >= _LONG_MAX or entry >= _LONG_MAX:
        return LATEST, -1
    if ledger < 0 or entry < 0:
        return EARLIEST, -1
    if ledger != ledger_of():
        raise _Refused(412, f"ledger {ledger} is not this topic's")
    exclusive = bool(id_.get("isExcluded", False))
    return entry + (1 if exclusive else 0), batch


class PulsarAdmin:
    """The admin and lookup routes over the core that the Pulsar front serves."""

    def __init__(self, core: Callable[[], object], pulsar_url: Callable[[], str | None],
                 http_url: Callable[[], str]) -> None:
        """``core()``: the core the Pulsar front serves; ``pulsar_url()``: its pulsar://
        address (None without a Pulsar front); ``http_url()``: this front's own."""
        self.core = core
        self.pulsar_url = pulsar_url
        self.http_url = http_url
        self._rates: dict[str, tuple[float, int, int]] = {}      # topic -> (when, in, out): rates between stats

    def routes(self) -> list[web.RouteDef]:
        r = self._route
        t = _T
        return [
            web.get("/admin/v2/clusters", r(self._clusters)),
            web.get("/admin/v2/tenants", r(self._tenants)),
            web.get("/admin/v2/tenants/{tenant}", r(self._tenant)),
            web.put("/admin/v2/tenants/{tenant}", r(self._create_tenant)),
            web.delete("/admin/v2/tenants/{tenant}", r(self._delete_tenant)),
            web.get("/admin/v2/namespaces/{tenant}", r(self._namespaces)),
            web.put(f"/admin/v2/namespaces/{t}", r(self._create_namespace)),
            web.delete(f"/admin/v2/namespaces/{t}", r(self._delete_namespace)),
            web.get(f"/admin/v2/namespaces/{t}/topics", r(self._namespace_topics)),
            *self._policy_routes(f"/admin/v2/namespaces/{t}/deduplication", "deduplicationEnabled", _bool, "post"),
            *self._policy_routes(f"/admin/v2/namespaces/{t}/retention", "retention_policies", _retention, "post"),
            *self._policy_routes(f"/admin/v2/namespaces/{t}/compactionThreshold", "compactionThreshold", _threshold,
                                 "put"),
            web.get(f"/admin/v2/persistent/{t}", r(self._topics)),
            web.get(f"/admin/v2/persistent/{t}/partitioned", r(self._partitioned_topics)),
            web.put(_TOPIC, r(self._create_topic)),
            web.delete(_TOPIC, r(self._delete_topic)),
            web.put(_TOPIC + "/partitions", r(self._create_partitioned)),
            web.post(_TOPIC + "/partitions", r(self._update_partitions)),
            web.get(_TOPIC + "/partitions", r(self._partitions)),
            web.delete(_TOPIC + "/partitions", r(self._delete_partitioned)),
            web.get(_TOPIC + "/stats", r(self._stats)),
            web.get(_TOPIC + "/partitioned-stats", r(self._partitioned_stats)),
            web.get(_TOPIC + "/internalStats", r(self._internal_stats)),
            web.get(_TOPIC + "/lastMessageId", r(self._last_message_id)),
            web.get(_TOPIC + "/subscriptions", r(self._subscriptions)),
            web.put(_TOPIC + "/subscription/{sub}", r(self._create_subscription)),
            web.delete(_TOPIC + "/subscription/{sub}", r(self._delete_subscription)),
            web.post(_TOPIC + "/subscription/{sub}/skip_all", r(self._skip_all)),
            web.post(_TOPIC + "/subscription/{sub}/skip/{n}", r(self._skip)),
            web.post(_TOPIC + "/subscription/{sub}/resetcursor/{timestamp}", r(self._reset_by_time)),
            web.post(_TOPIC + "/subscription/{sub}/resetcursor", r(self._reset_by_id)),
            web.put(_TOPIC + "/compaction", r(self._compact)),
            web.get(_TOPIC + "/compaction", r(self._compaction_status)),
            *self._policy_routes(_TOPIC + "/deduplicationEnabled", "deduplicationEnabled", _bool, "post"),
            *self._policy_routes(_TOPIC + "/compactionThreshold", "compactionThreshold", _threshold, "post"),
            web.get("/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}", r(self._lookup)),
            web.get(_LIVE, r(self._live_topics)),
            web.get(_LIVE + "/partitioned", r(self._live_partitioned_topics)),
            web.put(_LIVE + "/{topic}", r(self._create_live)),
            web.delete(_LIVE + "/{topic}", r(self._delete_live)),
            web.put(_LIVE + "/{topic}/partitions", r(self._create_live_partitioned)),
            web.delete(_LIVE + "/{topic}/partitions", r(self._delete_live_partitioned)),
            web.get(_LIVE + "/{topic}/internalStats", r(self._live_internal_stats)),
            web.get(_LIVE + "/{topic}/partitions", r(self._live_partitions)),
            web.get(_LIVE + "/{topic}/stats", r(self._live_stats)),
            web.get(_LIVE + "/{topic}/partitioned-stats", r(self._live_partitioned_stats)),
        ]

    def _route(self, handler):
        """A handler with Pulsar's refusals turned into their status and reason."""
        async def run(request: web.Request) -> web.Response:
            try:
                return await handler(request)
            except PulsarAdminError as exc:
                return _reason(_STATUS[exc.kind], str(exc))
            except _Refused as exc:
                return _reason(exc.status, str(exc))
            except PulsarNameError as exc:
                return _reason(412, str(exc))
        return run

    def _topic(self, request: web.Request) -> PulsarTopic:
        m = request.match_info
        return parse_topic(f"persistent://{m['tenant']}/{m['namespace']}/{m['topic']}")

    # -- clusters, tenants, namespaces ------------------------------------------------------------
    async def _clusters(self, request):
        return web.json_response(["standalone"])

    async def _tenants(self, request):
        return web.json_response(self.core().pulsar_tenant_names())

    async def _tenant(self, request):
        return web.json_response(self.core().pulsar_tenant_info(request.match_info["tenant"]))

    async def _create_tenant(self, request):
        info = await _json(request, {})
        if not isinstance(info, dict):
            raise _Refused(400, "a tenant's info is an object (adminRoles, allowedClusters)")
        self.core().create_pulsar_tenant(request.match_info["tenant"], info)
        return _no_content()

    async def _delete_tenant(self, request):
        self.core().delete_pulsar_tenant(request.match_info["tenant"])
        return _no_content()

    async def _namespaces(self, request):
        tenant = request.match_info["tenant"]
        core = self.core()
        if tenant not in core.pulsar_tenant_names():
            raise PulsarAdminError("not_found", "Tenant does not exist")
        return web.json_response(core.pulsar_namespace_names(tenant))

    async def _create_namespace(self, request):
        await _json(request)                # (a Policies body may come: it is not kept)
        self.core().create_pulsar_namespace(request.match_info["tenant"], request.match_info["namespace"])
        return _no_content()

    async def _delete_namespace(self, request):
        self.core().delete_pulsar_namespace(request.match_info["tenant"], request.match_info["namespace"])
        return _no_content()

    async def _namespace_topics(self, request):
        m = request.match_info
        core = self.core()
        core.check_pulsar_namespace(m["tenant"], m["namespace"])
        mode = request.query.get("mode", "PERSISTENT").upper()
        topics = [] if mode == "NON_PERSISTENT" else core.pulsar_topics_of(m["tenant"], m["namespace"])
        if mode in ("NON_PERSISTENT", "ALL"):
            topics += core.non_persistent_topics_of(m["tenant"], m["namespace"])
        return web.json_response(topics)

    def _policy_routes(self, path: str, key: str, read, set_method: str) -> list:
        """GET, set (POST or PUT, as Pulsar's path takes it) and DELETE of one policy, on a
        namespace or on a topic."""
        async def scope(request) -> str:
            m = request.match_info
            core = self.core()
            if "topic" in m:
                topic = self._topic(request)
                store_topic(topic)
                if not core.pulsar_topic_exists(topic) and not core.pulsar_partitions(topic):
                    raise PulsarAdminError("not_found", "Topic not found")
                return topic.full
            core.check_pulsar_namespace(m["tenant"], m["namespace"])
            return f"{m['tenant']}/{m['namespace']}"

        async def get(request):
            value = self.core().pulsar_policy(await scope(request), key)
            return web.json_response(value) if value is not None else _no_content()

        async def put(request):
            where = await scope(request)
            body = await _json(request)
            if body is None:
                raise _Refused(400, "the request needs a body")
            self.core().set_pulsar_policy(where, key, read(body, key))
            return _no_content()

        async def delete(request):
            self.core().set_pulsar_policy(await scope(request), key, None)
            return _no_content()

        return [web.get(path, self._route(get)), getattr(web, set_method)(path, self._route(put)),
                web.delete(path, self._route(delete))]

    # -- topics -----------------------------------------------------------------------------------
    async def _topics(self, request):
        m = request.match_info
        core = self.core()
        core.check_pulsar_namespace(m["tenant"], m["namespace"])
        return web.json_response(core.pulsar_topics_of(m["tenant"], m["namespace"]))

    async def _partitioned_topics(self, request):
        m = request.match_info
        core = self.core()
        core.check_pulsar_namespace(m["tenant"], m["namespace"])
        return web.json_response(core.pulsar_partitioned_topics_of(m["tenant"], m["namespace"]))

    async def _create_topic(self, request):
        await _json(request)                # (a properties body may come: it is not kept)
        self.core().create_pulsar_topic(creatable(self._topic(request)))
        return _no_content()

    async def _delete_topic(self, request):
        self.core().admin_delete_pulsar_topic(self._topic(request), _flag(request, "force"), partitioned=False)
        return _no_content()

    async def _create_partitioned(self, request):
        n = _int(await _json(request), "the number of partitions", bits=32)
        self.core().create_pulsar_partitioned(creatable(self._topic(request)), n)
        return _no_content()

    async def _update_partitions(self, request):
        n = _int(await _json(request), "the number of partitions", bits=32)
        self.core().add_pulsar_partitions(self._topic(request), n)
        return _no_content()

    async def _partitions(self, request):
        return web.json_response({"partitions": self.core().pulsar_partitions(self._topic(request))})

    async def _delete_partitioned(self, request):
        self.core().admin_delete_pulsar_topic(self._topic(request), _flag(request, "force"), partitioned=True)
        return _no_content()

    def _existing(self, request) -> tuple[PulsarTopic, str]:
        topic = self._topic(request)
        stored = store_topic(topic)
        if self.core().topic_config(stored) is None:
            raise PulsarAdminError("not_found", "Topic not found")
        return topic, stored

    async def _stats(self, request):
        _, stored = self._existing(request)
        return web.json_response(self._topic_stats(stored))

    async def _partitioned_stats(self, request):
        topic = self._topic(request)
        core = self.core()
        n = core.pulsar_partitions(topic)
        if not n:
            raise PulsarAdminError("not_found", "Partitioned topic does not exist")
        stored = store_topic(topic)
        parts = {f"{topic.full}-partition-{i}": self._topic_stats(f"{stored}-partition-{i}") for i in range(n)}
        total = _sum_stats(list(parts.values()))
        total["metadata"] = {"partitions": n}
        total["partitions"] = parts if _flag(request, "perPartition") or "perPartition" not in request.query \
            else {}
        return web.json_response(total)

    def _topic_stats(self, stored: str) -> dict:
        core = self.core()
        f = core.pulsar_topic_figures(stored)
        entries = f["end"] - f["first"]
        out = sum(sub["out"] for sub in f["subscriptions"].values())
        rate_in, rate_out = self._rates_of(stored, f["end"], out)
        avg = f["size"] / entries if entries else 0.0
        subs = {}
        for group, sub in f["subscriptions"].items():
            subs[subscription_of(group)] = {
                "msgRateOut": 0.0, "msgThroughputOut": 0.0, "bytesOutCounter": 0, "msgOutCounter": sub["out"],
                "msgRateRedeliver": 0.0, "messageAckRate": 0.0, "msgBacklog": sub["backlog"],
                "backlogSize": int(sub["backlog"] * avg), "msgBacklogNoDelayed": sub["backlog"], "msgDelayed": 0,
                "unackedMessages": sum(u for _, _, u in sub["consumers"]), "type": sub["type"],
                "blockedSubscriptionOnUnackedMsgs": False, "isDurable": sub["durable"], "isReplicated": False,
                "consumers": [{"consumerName": str(key), "availablePermits": permits, "unackedMessages": unacked,
                               "msgRateOut": 0.0, "msgThroughputOut": 0.0, "msgRateRedeliver": 0.0,
                               "blockedConsumerOnUnackedMsgs": False, "metadata": {}}
                              for key, permits, unacked in sub["consumers"]],
                "redeliveries": sub["stats"].get("redeliveries", 0)}
        return {"msgRateIn": rate_in, "msgThroughputIn": rate_in * avg, "msgRateOut": rate_out,
                "msgThroughputOut": rate_out * avg, "msgInCounter": entries, "bytesInCounter": f["size"],
                "msgOutCounter": out, "bytesOutCounter": int(out * avg), "averageMsgSize": avg,
                "storageSize": f["size"], "backlogSize": max((s["backlogSize"] for s in subs.values()), default=0),
                "publishers": [{"producerName": name, "accessMode": _ACCESS[mode], "msgRateIn": 0.0,
                                "msgThroughputIn": 0.0, "averageMsgSize": 0.0, "metadata": {}}
                               for name, _, mode in f["producers"]],
                "waitingPublishers": 0, "subscriptions": subs, "replication": {},
                "deduplicationStatus": "Enabled" if f["dedup"] else "Disabled",
                **({"topicEpoch": f["epoch"]} if f["epoch"] is not None else {})}

    def _rates_of(self, stored: str, msg_in: int, msg_out: int) -> tuple[float, float]:
        """Messages in and out per second since the previous stats of this topic (Pulsar's
        rates are per stats interval; the first read knows none: 0)."""
        now = time.monotonic()
        before = self._rates.get(stored)
        self._rates[stored] = (now, msg_in, msg_out)
        if before is None or now <= before[0]:
            return 0.0, 0.0
        dt = now - before[0]
        return max(msg_in - before[1], 0) / dt, max(msg_out - before[2], 0) / dt

    async def _internal_stats(self, request):
        _, stored = self._existing(request)
        core = self.core()
        f = core.pulsar_topic_figures(stored)
        ledger = ledger_id(stored)
        entries = f["end"] - f["first"]
        cursors = {}
        for group, sub in f["subscriptions"].items():
            acked = sub["acked"]
            cursors[subscription_of(group)] = {
                "markDeletePosition": f"{ledger}:{sub['mark_delete'] - 1}", "readPosition": f"{ledger}:{sub['read']}",
                "waitingReadOp": False, "pendingReadOps": 0, "messagesConsumedCounter": sub["out"],
                "cursorLedger": -1, "cursorLedgerLastEntry": -1,
                "individuallyDeletedMessages": _ranges(ledger, acked), "lastLedgerSwitchTimestamp": "",
                "state": "Open", "active": bool(sub["consumers"]),
                "numberOfEntriesSinceFirstNotAckedMessage": max(sub["read"] - sub["mark_delete"], 0) + 1,
                "totalNonContiguousDeletedMessagesRange": len(_runs(acked)), "properties": {}}
        if f["compaction_horizon"]:
            h = f["compaction_horizon"]
            cursors[f["compaction_subscription"]] = {
                "markDeletePosition": f"{ledger}:{h - 1}", "readPosition": f"{ledger}:{h}", "state": "Open",
                "individuallyDeletedMessages": "[]", "properties": {}, "messagesConsumedCounter": h - f["first"]}
        return web.json_response({
            "entriesAddedCounter": entries, "numberOfEntries": entries, "totalSize": f["size"],
            "currentLedgerEntries": entries, "currentLedgerSize": f["size"], "waitingCursorsCount": 0,
            "pendingAddEntriesCount": 0, "lastConfirmedEntry": f"{ledger}:{f['end'] - 1}", "state": "LedgerOpened",
            "ledgers": [{"ledgerId": ledger, "entries": entries, "size": f["size"], "offloaded": False,
                         "underReplicated": False}],
            "cursors": cursors, "schemaLedgers": [],
            "compactedLedger": {"ledgerId": -1, "entries": -1, "size": -1, "offloaded": False,
                                "underReplicated": False}})

    async def _last_message_id(self, request):
        topic, stored = self._existing(request)
        end = self.core().queue_bounds(stored, 0)[1]
        return web.json_response({"ledgerId": ledger_id(stored), "entryId": end - 1 if end else -1,
                                  "partitionIndex": topic.partition})

    # -- subscriptions ----------------------------------------------------------------------------
    async def _subscriptions(self, request):
        _, stored = self._existing(request)
        return web.json_response([subscription_of(g) for g in self.core().pulsar_subscription_names(stored)])

    async def _create_subscription(self, request):
        topic = self._topic(request)
        body = await _json(request)
        core = self.core()
        n = core.pulsar_partitions(topic)
        names = [parse_topic(f"{topic.full}-partition-{i}") for i in range(n)] if n else [topic]
        at = LATEST
        if body is not None:
            at, _ = _position(body, lambda: ledger_id(store_topic(topic)))
        for t in names:
            core.admin_create_pulsar_subscription(t, request.match_info["sub"], at)
        return _no_content()

    def _each_partition(self, request) -> list[PulsarTopic]:
        topic = self._topic(request)
        n = self.core().pulsar_partitions(topic)
        return [parse_topic(f"{topic.full}-partition-{i}") for i in range(n)] if n else [topic]

    async def _delete_subscription(self, request):
        for t in self._each_partition(request):
            self.core().admin_delete_pulsar_subscription(t, request.match_info["sub"], _flag(request, "force"))
        return _no_content()

    async def _skip(self, request):
        n = _int(request.match_info["n"], "the number of messages", bits=32)
        for t in self._each_partition(request):
            self.core().admin_skip_pulsar(t, request.match_info["sub"], n)
        return _no_content()

    async def _skip_all(self, request):
        for t in self._each_partition(request):
            self.core().admin_skip_pulsar(t, request.match_info["sub"], None)
        return _no_content()

    async def _reset_by_time(self, request):
        ts = _int(request.match_info["timestamp"], "the timestamp")
        for t in self._each_partition(request):
            self.core().admin_reset_pulsar_cursor(t, request.match_info["sub"], time_ms=ts)
        return _no_content()

    async def _reset_by_id(self, request):
        topic = self._topic(request)
        stored = store_topic(topic)
        body = await _json(request)
        if body is None:
            raise _Refused(400, "resetcursor needs a message id: {\"ledgerId\": L, \"entryId\": E}")
        at, _ = _position(body, lambda: ledger_id(stored))
        core = self.core()
        offset = core.queue_bounds(stored, 0)[1] if at == LATEST else 0 if at == EARLIEST else at
        core.admin_reset_pulsar_cursor(topic, request.match_info["sub"], offset=offset)
        return _no_content()

    # -- compaction -------------------------------------------------------------------------------
    async def _compact(self, request):
        self.core().admin_compact_pulsar_topic(self._topic(request))
        return _no_content()

    async def _compaction_status(self, request):
        _, stored = self._existing(request)
        status, last_error = self.core().pulsar_compaction_status(stored)
        return web.json_response({"status": status, "lastError": last_error})

    # -- lookup -----------------------------------------------------------------------------------
    # -- non-persistent topics --------------------------------------------------------------------
    def _live_topic(self, request) -> PulsarTopic:
        m = request.match_info
        return checked_topic(f"non-persistent://{m['tenant']}/{m['namespace']}/{m['topic']}")

    async def _live_topics(self, request):
        m = request.match_info
        self.core().check_pulsar_namespace(m["tenant"], m["namespace"])
        return web.json_response(self.core().non_persistent_topics_of(m["tenant"], m["namespace"]))

    async def _live_partitioned_topics(self, request):
        m = request.match_info
        self.core().check_pulsar_namespace(m["tenant"], m["namespace"])
        return web.json_response(self.core().non_persistent_topics_of(m["tenant"], m["namespace"], partitioned=True))

    async def _create_live(self, request):
        await _json(request)                # (a properties body may come: it is not kept)
        self.core().create_non_persistent_topic(creatable(self._live_topic(request)))
        return _no_content()

    async def _delete_live(self, request):
        self.core().delete_non_persistent_topic(self._live_topic(request), _flag(request, "force"), partitioned=False)
        return _no_content()

    async def _delete_live_partitioned(self, request):
        self.core().delete_non_persistent_topic(self._live_topic(request), _flag(request, "force"), partitioned=True)
        return _no_content()

    async def _create_live_partitioned(self, request):
        n = _int(await _json(request), "the number of partitions", bits=32)
        self.core().create_non_persistent_partitioned(creatable(self._live_topic(request)), n)
        return _no_content()

    async def _live_partitions(self, request):
        return web.json_response({"partitions": self.core().non_persistent_partitions(self._live_topic(request))})

    async def _live_stats(self, request):
        topic = self._live_topic(request)
        stats = self._live_topic_stats(topic.full)
        if stats is None:
            raise PulsarAdminError("not_found", "Topic not found")
        return web.json_response(stats)

    async def _live_partitioned_stats(self, request):
        topic = self._live_topic(request)
        n = self.core().non_persistent_partitions(topic)
        if not n:
            raise PulsarAdminError("not_found", "Partitioned topic does not exist")
        names = [f"{topic.full}-partition-{i}" for i in range(n)]
        parts = {name: stats for name in names if (stats := self._live_topic_stats(name)) is not None}
        total = _sum_stats(list(parts.values()))
        total["msgDropRate"] = sum(p["msgDropRate"] for p in parts.values())
        total["metadata"] = {"partitions": n}
        total["partitions"] = parts if _flag(request, "perPartition") or "perPartition" not in request.query \
            else {}
        return web.json_response(total)

    async def _live_internal_stats(self, request):
        """Pulsar's internal stats of a non-persistent topic: no ledger and no position, only
        the entries published and an empty cursor per subscription (by name, sorted)."""
        f = self.core().non_persistent_stats(self._live_topic(request).full)
        if f is None:
            raise PulsarAdminError("not_found", "Topic not found")
        cursor = {"waitingReadOp": False, "pendingReadOps": 0, "messagesConsumedCounter": 0, "cursorLedger": 0,
                  "cursorLedgerLastEntry": 0, "active": False, "numberOfEntriesSinceFirstNotAckedMessage": 0,
                  "totalNonContiguousDeletedMessagesRange": 0, "subscriptionHavePendingRead": False,
                  "subscriptionHavePendingReplayRead": False}
        return web.json_response({
            "entriesAddedCounter": f["entries"], "numberOfEntries": 0, "totalSize": 0, "currentLedgerEntries": 0,
            "currentLedgerSize": 0, "waitingCursorsCount": 0, "pendingAddEntriesCount": 0, "ledgers": [],
            "cursors": {name: dict(cursor) for name in sorted(f["subscriptions"])}, "schemaLedgers": []})

    def _live_topic_stats(self, name: str) -> dict | None:
        """Pulsar's NonPersistentTopicStats of a loaded topic (None: not loaded): no
        backlog and no storage, and what each subscription dropped (msgDropRate)."""
        f = self.core().non_persistent_stats(name)
        if f is None:
            return None
        out = sum(sub["msg_out"] for sub in f["subscriptions"].values())
        rate_in, rate_out = self._rates_of(name, f["msg_in"], out)
        avg = f["bytes_in"] / f["msg_in"] if f["msg_in"] else 0.0
        subs = {}
        for sub_name, sub in f["subscriptions"].items():
            drop_rate, _ = self._rates_of(f"{name} {sub_name} dropped", sub["dropped"], 0)
            subs[sub_name] = {
                "msgRateOut": 0.0, "msgThroughputOut": 0.0, "bytesOutCounter": sub["bytes_out"],
                "msgOutCounter": sub["msg_out"], "msgRateRedeliver": 0.0, "messageAckRate": 0.0, "msgBacklog": 0,
                "backlogSize": 0, "msgBacklogNoDelayed": 0, "msgDelayed": 0, "unackedMessages": 0,
                "type": sub["type"], "msgDropRate": drop_rate, "isDurable": sub["durable"], "isReplicated": False,
                "consumers": [{"consumerName": cname, "availablePermits": permits, "msgOutCounter": n_out,
                               "bytesOutCounter": b_out, "unackedMessages": 0, "msgRateOut": 0.0,
                               "msgThroughputOut": 0.0, "msgRateRedeliver": 0.0, "metadata": {}}
                              for cname, permits, n_out, b_out in sub["consumers"]]}
        return {"msgRateIn": rate_in, "msgThroughputIn": rate_in * avg, "msgRateOut": rate_out,
                "msgThroughputOut": rate_out * avg, "msgInCounter": f["msg_in"], "bytesInCounter": f["bytes_in"],
                "msgOutCounter": out, "bytesOutCounter": sum(sub["bytes_out"] for sub in f["subscriptions"].values()),
                "averageMsgSize": avg, "storageSize": 0, "backlogSize": 0,
                "msgDropRate": sum(sub["msgDropRate"] for sub in subs.values()),
                "publishers": [{"producerName": p, "msgRateIn": 0.0, "msgThroughputIn": 0.0, "averageMsgSize": 0.0,
                                "msgDropRate": 0.0, "metadata": {}} for p in f["producers"]],
                "waitingPublishers": 0, "subscriptions": subs, "replication": {},
                "deduplicationStatus": "Disabled"}

    async def _lookup(self, request):
        m = request.match_info
        if m["domain"] == "non-persistent":
            self._live_topic(request)
        elif m["domain"] != "persistent":
            raise _Refused(412, f"Invalid topic domain: {m['domain']} (persistent or non-persistent)")
        else:
            self._topic(request)
        own = self.pulsar_url()
        if own is None:
            raise _Refused(503, "this server has no Pulsar front (serve --no-pulsar)")
        name = request.query.get("listenerName") or request.headers.get("X-Pulsar-ListenerName", "")
        url = self.core().config.listener_url(name, own)
        if url is None:
            raise _Refused(503, f"the broker do not have {name} listener")
        return web.json_response({"brokerUrl": url, "httpUrl": self.http_url(), "nativeUrl": url,
                                  "brokerUrlSsl": ""})


_ACCESS = {0: "Shared", 1: "Exclusive", 2: "WaitForExclusive", 3: "ExclusiveWithFencing"}


def _runs(offsets: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for o in offsets:
        if runs and runs[-1][1] == o - 1:
            runs[-1] = (runs[-1][0], o)
        else:
            runs.append((o, o))
    return runs


def _ranges(ledger: int, offsets: list[int]) -> str:
    """Acked offsets above the mark-delete position, as Pulsar prints them: [(L:a-1..L:b]]."""
    return "[" + ",".join(f"({ledger}:{a - 1}..{ledger}:{b}]" for a, b in _runs(offsets)) + "]"


def _sum_stats(parts: list[dict]) -> dict:
    """A partitioned topic's stats: the partitions' figures added up."""
    total: dict = {"publishers": [], "subscriptions": {}, "replication": {}}
    for key in ("msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "msgInCounter", "bytesInCounter",
                "msgOutCounter", "bytesOutCounter", "storageSize", "backlogSize", "waitingPublishers"):
        total[key] = sum(p[key] for p in parts)
    total["averageMsgSize"] = total["bytesInCounter"] / total["msgInCounter"] if total["msgInCounter"] else 0.0
    total["deduplicationStatus"] = parts[0]["deduplicationStatus"] if parts else "Disabled"
    for p in parts:
        total["publishers"] += p["publishers"]
        for name, sub in p["subscriptions"].items():
            agg = total["subscriptions"].setdefault(name, {**sub, "consumers": [], "msgBacklog": 0, "backlogSize": 0,
                                                           "msgOutCounter": 0, "unackedMessages": 0,
                                                           "msgBacklogNoDelayed": 0})
            for key in ("msgBacklog", "backlogSize", "msgOutCounter", "unackedMessages", "msgBacklogNoDelayed"):
                agg[key] += sub[key]
            agg["consumers"] += sub["consumers"]
    return total


def _retention(body, key: str) -> dict:
    if not isinstance(body, dict):
        raise _Refused(400, "retention is an object: {\"retentionTimeInMinutes\": M, \"retentionSizeInMB\": S}")
    return {"retentionTimeInMinutes": _int(body.get("retentionTimeInMinutes", 0), "retentionTimeInMinutes",
                                           bits=32),
            "retentionSizeInMB": _int(body.get("retentionSizeInMB", 0), "retentionSizeInMB")}


def _threshold(body, key: str) -> int:
    n = _int(body, "the compaction threshold")
    if n < 0:
        raise _Refused(412, "compactionThreshold must be 0 or greater")
    return n

