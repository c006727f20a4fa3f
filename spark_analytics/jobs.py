"""The analyses, in Spark SQL, over one snapshot's records.

Every rule here is ``accounting``'s, written in Spark SQL (classification, message
keys, consumed / sent back, the four counts); tests run both on the same store and
compare. The parts of the analysis (``analysis_sql``), each a SELECT over the records:

  c            every record with its kind and group (``classify_sql``, ``group_sql``)
  msg          one row per message (an original or a delayed delivery; its key is
               its offsetMsgId)
  cp           retry / dead-letter records with their message's key and topic: by
               ORIGIN_MESSAGE_ID as an offsetMsgId, else as the UNIQ_KEY of the first
               message with it, else by their own UNIQ_KEY; else a key of their own
  dl           what each group can consume: the messages of the topics it consumes
               (attempt 0) and its %RETRY% copies (attempt = reconsumeTimes), each
               with ``consumed`` from the offset table
  sb           send-back records of each group (attempt = reconsumeTimes, dlq flag)
  facts        the per-message fact frame: the dl and sb rows of each (group, message)
               with what decides its outcome (a consumed attempt without a send-back
               of the next one, and no dead letter) from one window over (group,
               message); per_group, retried, funnel, poison, duplicates and
               time_to_dlq are aggregates of it (fm: per message, fa: per attempt)

Lateness pairs each SCHEDULE_TOPIC_XXXX record with the copy re-stored from it (same
destination topic and queue, UNIQ_KEY, ORIGIN_MESSAGE_ID, reconsumeTimes and born time;
the n-th of each side when several match): due = schedule store time + delay(level),
late = copy store time - due; both lateness tables are one aggregation (grouping
sets). "Now" is the newest store timestamp in the snapshot, so ages mean the same on a
virtual clock.

Why SQL text: a statement is parsed and analysed once, by the JVM (or the Spark Connect
server); built as ~60 PySpark DataFrames the analysis took ~8,500 py4j calls and ~5 s
of eager analysis on a cold JVM. The parts several tables use (c, cp, facts, fm) are
lazy local checkpoints, leaves in the plans that use them: computed once, by the one
job that computes every table (``Analysis.collect``: each row as JSON, sorted here,
not by Spark: a global sort is an exchange and a sampling job per table). A small
input is one local relation in one partition (``_one_partition``) and Spark's
small-input settings (session.SMALL_INPUT_SQL_CONF) let every operator find its rows
where they are: no exchange at all (measured on 4,590 records: 3 stages in 2 jobs,
where the DataFrame version ran 75 stages in 3 jobs).
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field

import pyarrow as pa

from rocketmq_emulator.store import DEFAULT_MESSAGE_DELAY_LEVEL, parse_delay_table
from rocketmq_emulator.store.accounting import (NOT_BUSINESS_PREFIXES, PULSAR_DLQ_SUFFIX, PULSAR_RETRY_SUFFIX, Kind,
                                                normalize_offsets, redelivery_stats)
from rocketmq_emulator.store.records import DLQ_PREFIX, POP_RETRY_SEPARATOR, RETRY_PREFIX, SCHEDULE_TOPIC, SYSTEM_TOPICS

__all__ = ["DEFAULT_DELAY_LEVELS", "parse_delay_levels", "Analysis", "analyze", "decode_inputs", "classify_sql",
           "group_sql", "READ_COLUMNS", "TABLES", "TABLE_SCHEMAS", "BrokerInput", "analysis_sql"]

DEFAULT_DELAY_LEVELS = DEFAULT_MESSAGE_DELAY_LEVEL      # the store's messageDelayLevel (defined there)

# The analyses need no properties map and no body: reading only these columns skips
# decoding them (their types come from datasource.spark_schema).
READ_COLUMNS = ["physical_offset", "store_timestamp", "born_timestamp", "topic", "queue_id", "queue_offset",
                "offset_msg_id", "uniq_key", "origin_message_id", "retry_topic", "real_topic", "real_qid",
                "reconsume_times", "tags", "keys", "pulsar_chunk", "sys_flag", "body_size"]

_ARROW = {"string": pa.string(), "bigint": pa.int64(), "int": pa.int32(), "double": pa.float64(),
          "boolean": pa.bool_()}


def _schema(text: str) -> list[tuple[str, str, bool]]:
    """'name type[!], ...' (! = not null) -> [(name, SQL type, nullable)]."""
    out = []
    for part in text.split(","):
        name, typ = part.split()
        out.append((name, typ.rstrip("!"), not typ.endswith("!")))
    return out


# Each table's columns: their order, SQL type and nullability are those of the
# DataFrames that computed the tables before (the Parquet files keep their schema).
TABLE_SCHEMAS: dict[str, list[tuple[str, str, bool]]] = {name: _schema(text) for name, text in {
    "per_group": "group string, topic string, produced bigint, succeeded bigint, dead_lettered bigint, "
                 "send_backs bigint, in_flight bigint",
    "retried": "group string, topic string, retries bigint!, messages bigint!",
    "funnel": "group string, topic string, reconsume_times int, delivered bigint, consumed bigint, succeeded bigint, "
              "sent_back bigint, dead_lettered bigint",
    "lateness": "group string, topic string, level int, scheduled bigint!, delivered bigint!, pending bigint, "
                "overdue bigint, delay_ms bigint, p50_ms double, p99_ms double, max_ms bigint",
    "lateness_by_level": "level int, scheduled bigint!, delivered bigint!, pending bigint, overdue bigint, "
                         "delay_ms bigint, p50_ms double, p99_ms double, max_ms bigint",
    "time_to_dlq": "group string, topic string, dead_lettered bigint!, p50_ms double, p99_ms double, max_ms bigint, "
                   "min_ms bigint",
    "poison": "group string, topic string, rank int!, key string, uniq_key string, keys string, tags string, "
              "send_backs bigint!, max_reconsume_times int, dead_lettered int, first_store bigint, "
              "last_send_back bigint",
    "duplicates": "group string, topic string, uniq_key string, reconsume_times int, copies bigint!, messages bigint!",
    "lag": "group string, topic string, broker string, queue_id int, committed bigint, max_offset bigint, lag bigint!",
    "pinning": "group string, topic string, broker string, queue_id int, queue_offset bigint, lag bigint!, "
               "pins_queue_min boolean, physical_offset bigint, uniq_key string, keys string, store_timestamp bigint, "
               "reconsume_times int, age_ms bigint",
    "produced_by_topic": "topic string, produced bigint!",
    "redeliveries": "group string, topic string, redeliveries bigint, redelivered_messages bigint, "
                    "max_redelivery_count int",
    "copies_by_broker": "group string, topic string, message_broker string!, copy_broker string!, copies bigint!, "
                        "messages bigint!",
}.items()}
TABLES = tuple(TABLE_SCHEMAS)

# Each table's order (Spark's ORDER BY before: ascending, nulls first). Sorting the
# collected rows here gives the same order: every key list is unique within its table.
_ORDER = {"per_group": ("group", "topic"), "retried": ("group", "topic", "retries"),
          "funnel": ("group", "topic", "reconsume_times"), "lateness": ("group", "topic", "level"),
          "lateness_by_level": ("level",), "time_to_dlq": ("group", "topic"), "poison": ("group", "rank"),
          "duplicates": ("group", "topic", "uniq_key", "reconsume_times"),
          "lag": ("group", "topic", "broker", "queue_id"), "pinning": ("group", "topic", "broker", "queue_id"),
          "produced_by_topic": ("topic",), "redeliveries": (),
          "copies_by_broker": ("group", "topic", "message_broker", "copy_broker")}


def parse_delay_levels(text: str) -> list[int]:
    """RocketMQ messageDelayLevel ("1s 5s ... 2h") → ms per level (level = index + 1),
    as a list the report may extend; the store's parser (ValueError on a bad table)."""
    return list(parse_delay_table(text))


def _lit(text: str) -> str:
    """A Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _business(c: str) -> str:
    """accounting.is_business_topic, as SQL."""
    cond = [f"{c} IS NOT NULL", f"{c} != ''", f"NOT {c} IN ({', '.join(_lit(t) for t in sorted(SYSTEM_TOPICS))})"]
    cond += [f"NOT startswith({c}, {_lit(p)})" for p in NOT_BUSINESS_PREFIXES]
    return "(" + " AND ".join(cond) + ")"


_K = {k.name: _lit(k.value) for k in Kind}
_SEND_BACK_KINDS = f"({_K['RETRY_SCHEDULED']}, {_K['RETRY_DIRECT']}, {_K['DEAD_LETTER']})"
_RETRY_COPY_KINDS = f"({_K['RETRY_DELIVERY']}, {_K['RETRY_DIRECT']})"
_MESSAGE_KINDS = f"({_K['ORIGINAL']}, {_K['DELAYED_DELIVERY']})"


def classify_sql() -> str:
    """accounting.classify, as SQL over a record's topic, real_topic, sys_flag and pulsar_chunk."""
    filled = "real_topic IS NOT NULL AND real_topic != ''"
    return (f"CASE WHEN (sys_flag & 12) IN (4, 12) THEN {_K['OTHER']} "
            # a Pulsar chunk before its message's last ("<i>/<n>"): not a message of its own
            f"WHEN pulsar_chunk IS NOT NULL AND try_cast(split(pulsar_chunk, '/')[0] AS INT) "
            f"< try_cast(split(pulsar_chunk, '/')[1] AS INT) - 1 THEN {_K['OTHER']} "
            f"WHEN topic = {_lit(SCHEDULE_TOPIC)} THEN CASE "
            f"WHEN startswith(real_topic, {_lit(RETRY_PREFIX)}) THEN {_K['RETRY_SCHEDULED']} "
            f"WHEN {_business('real_topic')} THEN {_K['DELAYED_ORIGINAL']} ELSE {_K['OTHER']} END "
            f"WHEN startswith(topic, {_lit(RETRY_PREFIX)}) THEN CASE "
            f"WHEN real_topic <=> topic THEN {_K['RETRY_DELIVERY']} ELSE {_K['RETRY_DIRECT']} END "
            f"WHEN startswith(topic, {_lit(DLQ_PREFIX)}) THEN {_K['DEAD_LETTER']} "
            f"WHEN {_business('topic')} THEN CASE "
            f"WHEN real_topic <=> topic THEN {_K['DELAYED_DELIVERY']} "
            f"WHEN {filled} AND endswith(topic, {_lit(PULSAR_DLQ_SUFFIX)}) THEN {_K['DEAD_LETTER']} "   # Pulsar's
            f"WHEN {filled} AND endswith(topic, {_lit(PULSAR_RETRY_SUFFIX)}) THEN {_K['RETRY_DIRECT']} "
            f"ELSE {_K['ORIGINAL']} END "
            f"ELSE {_K['OTHER']} END")


def _pulsar_letter_group() -> str:
    """accounting.pulsar_letter_group, as SQL."""
    n = (f"(CASE WHEN endswith(topic, {_lit(PULSAR_DLQ_SUFFIX)}) THEN {len(PULSAR_DLQ_SUFFIX)} "
         f"ELSE {len(PULSAR_RETRY_SUFFIX)} END)")
    return (f"CASE WHEN startswith(topic, concat(real_topic, '-')) AND length(topic) - {n} > length(real_topic) + 1 "
            f"THEN substring(topic, length(real_topic) + 2, length(topic) - length(real_topic) - 1 - {n}) "
            f"ELSE substring_index(substring(topic, 1, length(topic) - {n}), '|', -1) END")


def group_sql() -> str:
    """accounting.group_of, as SQL over a classified record (``kind``)."""
    return (f"CASE WHEN kind = {_K['RETRY_SCHEDULED']} THEN substring(real_topic, {len(RETRY_PREFIX) + 1}) "
            f"WHEN kind IN {_RETRY_COPY_KINDS} THEN CASE "          # (5.x: %RETRY%<group>+<topic>)
            f"WHEN startswith(topic, {_lit(RETRY_PREFIX)}) THEN substring_index(substring(topic, "
            f"{len(RETRY_PREFIX) + 1}), {_lit(POP_RETRY_SEPARATOR)}, 1) ELSE {_pulsar_letter_group()} END "
            f"WHEN kind = {_K['DEAD_LETTER']} THEN CASE WHEN startswith(topic, {_lit(DLQ_PREFIX)}) "
            f"THEN substring(topic, {len(DLQ_PREFIX) + 1}) ELSE {_pulsar_letter_group()} END END")


def _select(table: str, exprs: dict[str, str], source: str) -> str:
    """SELECT the table's columns, each cast to its type in TABLE_SCHEMAS."""
    cols = ", ".join(f"CAST({exprs.get(name, f'`{name}`')} AS {typ}) AS `{name}`"
                     for name, typ, _ in TABLE_SCHEMAS[table])
    return f"SELECT {cols} FROM {source}"


def _json(table: str, exprs: dict[str, str]) -> str:
    """A row of the table as JSON (its columns in order, each cast to its type; to_json
    leaves out the nulls, as of to_json(struct(*)))."""
    cols = ", ".join(f"{_lit(name)}, CAST({exprs.get(name, f'`{name}`')} AS {typ})"
                     for name, typ, _ in TABLE_SCHEMAS[table])
    return f"to_json(named_struct({cols}))"


def analysis_sql(views: dict[str, str], delays_ms: list[int], top_n: int, one_partition: bool = False,
                 view_prefix: str = "rmq") -> tuple[list[tuple[str, str]], str]:
    """The analysis as SQL: ``(steps, query)``. Each step is (view name, SELECT) of a part
    several tables use, to be checkpointed lazily as that view before the query runs: it
    is computed once, in the query's job, and the query's plan holds it as one leaf, not
    its whole tree (measured: the query with every part inlined took 5-10 s to plan).
    The query returns a (table name, row as JSON) row per row of every table in TABLES
    but ``redeliveries`` (no record holds those), and a '_facts' row (records, first and
    last store time). ``views``: the temp views' names of the records (``records``:
    READ_COLUMNS, broker, broker_idx), the offset table (``offsets``: o_topic, o_group,
    o_queue_id, committed, o_broker) and the consume queues' max offsets (``cq``:
    cq_broker, cq_topic, cq_qid, cq_max). ``one_partition``: the views are each one
    partition (see ``_one_partition``); a union's or an inner join's output, which
    Spark does not take for one partition, is then made one again (without a shuffle)."""
    r, o, cq = views["records"], views["offsets"], views["cq"]

    def one(sql: str) -> str:
        return f"SELECT /*+ COALESCE(1) */ * FROM ({sql})" if one_partition else sql

    delay = "CASE level " + " ".join(f"WHEN {i + 1} THEN {int(ms)}L" for i, ms in enumerate(delays_ms)) + " END"
    checkpointed = {name: f"{view_prefix}_{name}" for name in _CHECKPOINTED}
    # "now" (the newest store time): a scalar subquery, one small job before the query's
    now = f"(SELECT coalesce(max(store_timestamp), 0L) FROM {checkpointed['c']})"
    # Parts: name -> (the parts it uses, SELECT); {name} in a SELECT names a part
    parts: dict[str, tuple[tuple[str, ...], str]] = {
        "c": ((), f"SELECT *, {group_sql()} AS grp FROM (SELECT *, {classify_sql()} AS kind FROM {r})"),
        "msg": (("c",), "SELECT offset_msg_id AS key, topic AS m_topic, queue_id, queue_offset, uniq_key, "
                        "store_timestamp AS first_store, physical_offset, keys, tags, broker, broker_idx "
                        f"FROM {{c}} WHERE kind IN {_MESSAGE_KINDS}"),
        # the first message with a UNIQ_KEY: in broker order, then log order (accounting's order)
        "first_uniq": (("msg",), "SELECT uniq_key AS f_uniq, min(struct(broker_idx, physical_offset, key, m_topic, "
                                 "broker)) AS f FROM {msg} WHERE uniq_key IS NOT NULL GROUP BY uniq_key"),
        "cp": (("c", "msg", "first_uniq"),
               "SELECT x.*, coalesce(m1.key, u1.f.key, u2.f.key, "
               "concat('?', coalesce(x.origin_message_id, x.uniq_key, x.offset_msg_id))) AS key, "
               "CASE WHEN m1.key IS NOT NULL THEN m1.m_topic WHEN u1.f IS NOT NULL THEN u1.f.m_topic "
               "WHEN u2.f IS NOT NULL THEN u2.f.m_topic ELSE coalesce(x.retry_topic, '') END AS btopic, "
               "coalesce(m1.broker, u1.f.broker, u2.f.broker) AS message_broker "
               f"FROM (SELECT * FROM {{c}} WHERE kind IN {_SEND_BACK_KINDS[:-1]}, {_RETRY_COPY_KINDS[1:]}) x "
               "LEFT JOIN (SELECT key, m_topic, broker FROM {msg}) m1 ON x.origin_message_id = m1.key "
               "LEFT JOIN {first_uniq} u1 ON x.origin_message_id = u1.f_uniq "
               "LEFT JOIN {first_uniq} u2 ON x.uniq_key = u2.f_uniq"),
        # a group consumes a topic it has offsets of, or whose messages it has copies of
        "sub": (("cp",), "SELECT DISTINCT s_topic, s_group FROM (" + one(
            f"SELECT o_topic AS s_topic, o_group AS s_group FROM {o} WHERE {_business('o_topic')} "
            "UNION ALL SELECT btopic, grp FROM {cp}") + ")"),
        "dl": (("msg", "sub", "cp"),
               "SELECT d.*, coalesce(o.committed, -1) > d.queue_offset AS consumed FROM (" + one(
                   "SELECT s.s_group AS grp, m.key, m.m_topic AS btopic, m.m_topic AS src_topic, m.queue_id, "
                   "m.queue_offset, 0 AS attempt, m.uniq_key, m.broker, m.uniq_key AS m_uniq_key, m.keys AS m_keys, "
                   "m.tags AS m_tags, m.first_store AS m_first_store FROM {msg} m JOIN {sub} s "
                   "ON m.m_topic = s.s_topic UNION ALL SELECT grp, key, btopic, topic, queue_id, queue_offset, "
                   "reconsume_times, uniq_key, broker, NULL, NULL, NULL, NULL FROM {cp} "
                   f"WHERE kind IN {_RETRY_COPY_KINDS}") + f") d LEFT JOIN {o} o ON d.src_topic = o.o_topic "
               "AND d.grp = o.o_group AND d.queue_id = o.o_queue_id AND d.broker = o.o_broker"),
        "sb": (("cp",), f"SELECT grp, key, btopic, reconsume_times AS attempt, kind = {_K['DEAD_LETTER']} AS dlq, "
                        "store_timestamp, broker, message_broker FROM {cp} "
                        f"WHERE kind IN {_SEND_BACK_KINDS}"),
        # The per-message fact frame: every delivery and send-back of a (group, message).
        # ok: consumed, no send-back of the next attempt, no dead letter (accounting's rule)
        "facts": (("dl", "sb"),
                  "SELECT *, is_dl AND consumed AND NOT array_contains(sb_attempts, attempt + 1) AND NOT key_dead "
                  "AS ok FROM (SELECT *, bool_or(NOT is_dl AND dlq) OVER w AS key_dead, "
                  "collect_set(CASE WHEN NOT is_dl THEN attempt END) OVER w AS sb_attempts, "
                  "max(m_first_store) OVER w AS key_first_store FROM (" + one(
                      "SELECT grp, key, btopic, attempt, TRUE AS is_dl, consumed, NULL AS dlq, uniq_key, m_uniq_key, "
                      "m_keys, m_tags, m_first_store, NULL AS store_timestamp FROM {dl} UNION ALL SELECT grp, key, "
                      "btopic, attempt, FALSE, NULL, dlq, NULL, NULL, NULL, NULL, NULL, store_timestamp FROM {sb}")
                  + ") WINDOW w AS (PARTITION BY grp, key))"),
        # per (group, message, topic)
        "fm": (("facts",), "SELECT grp, key, btopic, bool_or(ok) AS succeeded, bool_or(NOT is_dl AND dlq) AS dead, "
                           "count_if(NOT is_dl) AS send_backs, count_if(NOT is_dl AND NOT dlq) AS retry_records, "
                           "size(collect_set(CASE WHEN NOT is_dl AND NOT dlq THEN attempt END)) AS retries, "
                           "max(CASE WHEN NOT is_dl THEN attempt END) AS max_attempt, "
                           "max(CASE WHEN NOT is_dl THEN CAST(dlq AS INT) END) AS max_dlq, "
                           "max(CASE WHEN NOT is_dl THEN store_timestamp END) AS last_send_back, "
                           "max(m_uniq_key) AS m_uniq_key, max(m_keys) AS m_keys, max(m_tags) AS m_tags, "
                           "max(m_first_store) AS m_first_store FROM {facts} GROUP BY grp, key, btopic"),
        # per (group, message, topic, attempt): a send-back of attempt k counts at k - 1
        "fa": (("facts",), "SELECT grp, btopic, CASE WHEN is_dl THEN attempt ELSE attempt - 1 END AS fa, "
                           "bool_or(is_dl) AS delivered, bool_or(is_dl AND consumed) AS consumed, "
                           "bool_or(ok) AS succeeded, bool_or(NOT is_dl AND NOT dlq) AS sent_back, "
                           "bool_or(NOT is_dl AND dlq) AS dead FROM {facts} "
                           "GROUP BY grp, key, btopic, CASE WHEN is_dl THEN attempt ELSE attempt - 1 END"),
        "produced": (("c",), "SELECT CASE WHEN kind = {o} THEN topic ELSE real_topic END AS btopic, count(*) AS produced "
                             "FROM {{c}} WHERE kind IN ({o}, {d}) GROUP BY 1".format(o=_K["ORIGINAL"],
                                                                                   d=_K["DELAYED_ORIGINAL"])),
        "pg": (("fm",), "SELECT grp, btopic, count_if(succeeded) AS succeeded, count_if(dead) AS dead_lettered, "
                        "sum(send_backs) AS send_backs FROM {fm} GROUP BY grp, btopic"),
        # (a due message is re-stored by the broker that held it: pairs never cross brokers)
        "lat_rows": (("c",), one(
            "SELECT 's' AS side, broker AS p_broker, real_topic AS p_topic, real_qid AS p_qid, uniq_key AS p_uniq, "
            "origin_message_id AS p_origin, reconsume_times AS p_recon, born_timestamp AS p_born, "
            "physical_offset AS phys, queue_id + 1 AS level, store_timestamp AS s_store, "
            f"CASE WHEN kind = {_K['RETRY_SCHEDULED']} THEN grp ELSE '' END AS grp, "
            f"CASE WHEN kind = {_K['RETRY_SCHEDULED']} THEN coalesce(retry_topic, '') ELSE real_topic END AS topic, "
            f"NULL AS r_store FROM {{c}} WHERE topic = {_lit(SCHEDULE_TOPIC)} UNION ALL "
            "SELECT 'r', broker, topic, queue_id, uniq_key, origin_message_id, reconsume_times, born_timestamp, "
            "physical_offset, NULL, NULL, NULL, NULL, store_timestamp FROM {c} WHERE real_topic <=> topic")),
        # the n-th schedule record of a key with the n-th copy re-stored
        "pairs": (("lat_rows",),
                  "SELECT max(CASE WHEN side = 's' THEN level END) AS level, max(s_store) AS s_store, "
                  "max(CASE WHEN side = 's' THEN grp END) AS grp, max(CASE WHEN side = 's' THEN topic END) AS topic, "
                  "max(r_store) AS r_store, bool_or(side = 's') AS scheduled FROM (SELECT *, row_number() OVER ("
                  "PARTITION BY p_broker, p_topic, p_qid, p_uniq, p_origin, p_recon, p_born, side ORDER BY phys) "
                  "AS rn FROM {lat_rows}) GROUP BY p_broker, p_topic, p_qid, p_uniq, p_origin, p_recon, p_born, rn"),
        "late": (("pairs", "c"),
                 f"SELECT grp, topic, level, {delay} AS delay_ms, r_store, late_ms, r_store IS NULL AS pending, "
                 f"r_store IS NULL AND due < {now} AS overdue FROM (SELECT *, r_store - due AS late_ms FROM ("
                 f"SELECT *, s_store + coalesce({delay}, 1000) AS due FROM {{pairs}} WHERE scheduled))"),
        "qmax": (("c",), "SELECT broker AS q_broker, topic AS q_topic, queue_id AS q_qid, "
                         "max(queue_offset) + 1 AS log_max FROM {c} GROUP BY broker, topic, queue_id"),
        "lag": (("qmax",), "SELECT o.o_group AS grp, o.o_topic AS topic, o.o_broker AS broker, "
                           "o.o_queue_id AS queue_id, o.committed, coalesce(q.log_max, cq.cq_max, o.committed) "
                           "AS max_offset, greatest(coalesce(q.log_max, cq.cq_max, o.committed) - o.committed, 0) "
                           f"AS lag FROM {o} o LEFT JOIN {{qmax}} q ON o.o_topic = q.q_topic "
                           "AND o.o_queue_id = q.q_qid AND o.o_broker = q.q_broker "
                           f"LEFT JOIN {cq} cq ON o.o_topic = cq.cq_topic AND o.o_queue_id = cq.cq_qid "
                           "AND o.o_broker = cq.cq_broker"),
        # the records at a committed offset (a join with the small offset table; not a
        # semi-join, which Spark moves below the records' one partition)
        "at_offset": (("c",), one(
            f"SELECT r.* FROM {{c}} r JOIN (SELECT DISTINCT o_broker, o_topic, o_queue_id, committed FROM {o}) o "
            "ON r.broker = o.o_broker AND r.topic = o.o_topic AND r.queue_id = o.o_queue_id "
            "AND r.queue_offset = o.committed")),
        "pinned": (("lag",), "SELECT l.*, min(l.committed) OVER (PARTITION BY l.broker, l.topic, l.queue_id) "
                             "AS queue_min FROM {lag} l WHERE l.lag > 0"),
    }
    tables = {
        "per_group": (("sub", "produced", "pg"), _select("per_group", {
            "group": "s.s_group", "topic": "s.s_topic", "produced": "coalesce(p.produced, 0)",
            "succeeded": "coalesce(g.succeeded, 0)", "dead_lettered": "coalesce(g.dead_lettered, 0)",
            "send_backs": "coalesce(g.send_backs, 0)",
            "in_flight": "coalesce(p.produced, 0) - coalesce(g.succeeded, 0) - coalesce(g.dead_lettered, 0)"},
            "{sub} s LEFT JOIN {produced} p ON s.s_topic = p.btopic "
            "LEFT JOIN {pg} g ON s.s_group = g.grp AND s.s_topic = g.btopic")),
        "retried": (("fm",), _select("retried", {"group": "grp", "topic": "btopic", "messages": "count(*)"},
                                     "{fm} WHERE retry_records > 0 GROUP BY grp, btopic, retries")),
        "funnel": (("fa",), _select("funnel", {
            "group": "grp", "topic": "btopic", "reconsume_times": "fa", "delivered": "count_if(delivered)",
            "consumed": "count_if(consumed)", "succeeded": "count_if(succeeded)", "sent_back": "count_if(sent_back)",
            "dead_lettered": "count_if(dead)"}, "{fa} GROUP BY grp, btopic, fa")),
        # per dead-letter copy of a message in the snapshot
        "time_to_dlq": (("facts",), _select("time_to_dlq", {
            "group": "grp", "topic": "btopic", "dead_lettered": "count(*)", "p50_ms": "percentile(ms, 0.5)",
            "p99_ms": "percentile(ms, 0.99)", "max_ms": "max(ms)", "min_ms": "min(ms)"},
            "(SELECT grp, btopic, store_timestamp - key_first_store AS ms FROM {facts} "
            "WHERE NOT is_dl AND dlq AND key_first_store IS NOT NULL) GROUP BY grp, btopic")),
        "poison": (("fm",), _select("poison", {
            "group": "grp", "topic": "btopic", "uniq_key": "m_uniq_key", "keys": "m_keys", "tags": "m_tags",
            "max_reconsume_times": "max_attempt", "dead_lettered": "max_dlq", "first_store": "m_first_store"},
            "(SELECT *, row_number() OVER (PARTITION BY grp ORDER BY send_backs DESC, max_dlq DESC, key) AS rank "
            f"FROM {{fm}} WHERE send_backs > 0) WHERE rank <= {int(top_n)}")),
        "duplicates": (("facts",), _select("duplicates", {
            "group": "grp", "topic": "btopic", "reconsume_times": "attempt", "copies": "count(*)",
            "messages": "count(DISTINCT key)"},
            "{facts} WHERE is_dl AND uniq_key IS NOT NULL GROUP BY grp, btopic, uniq_key, attempt "
            "HAVING count(*) > 1")),
        "lag": (("lag",), _select("lag", {"group": "grp"}, "{lag}")),
        "pinning": (("pinned", "at_offset", "c"), _select("pinning", {
            "group": "l.grp", "topic": "l.topic", "broker": "l.broker", "queue_id": "l.queue_id",
            "queue_offset": "l.committed", "lag": "l.lag", "pins_queue_min": "l.committed = l.queue_min",
            "physical_offset": "a.physical_offset", "uniq_key": "a.uniq_key", "keys": "a.keys",
            "store_timestamp": "a.store_timestamp", "reconsume_times": "a.reconsume_times",
            "age_ms": f"{now} - a.store_timestamp"},
            "{pinned} l LEFT JOIN {at_offset} a ON l.broker = a.broker AND l.topic = a.topic "
            "AND l.queue_id = a.queue_id AND l.committed = a.queue_offset")),
        "produced_by_topic": (("produced",), _select("produced_by_topic", {"topic": "btopic"}, "{produced}")),
        # where each group's retry and dead-letter copies landed, beside where their message
        # is: a client's fallback send-back puts a copy on another broker than its message's
        "copies_by_broker": (("sb",), _select("copies_by_broker", {
            "group": "grp", "topic": "btopic", "message_broker": "coalesce(message_broker, '?')",
            "copy_broker": "broker", "copies": "count(*)", "messages": "count(DISTINCT key)"},
            "{sb} GROUP BY grp, btopic, coalesce(message_broker, '?'), broker")),
    }

    # Both lateness tables from one aggregation (grouping sets), in one branch of the query
    late_aggs = {"scheduled": "count(*)", "delivered": "count(r_store)", "pending": "sum(CAST(pending AS INT))",
                 "overdue": "sum(CAST(overdue AS INT))", "delay_ms": "first(delay_ms, TRUE)",
                 "p50_ms": "percentile(late_ms, 0.5)", "p99_ms": "percentile(late_ms, 0.99)",
                 "max_ms": "max(late_ms)"}
    lateness = (("late",), "SELECT CASE WHEN g = 0 THEN 'lateness' ELSE 'lateness_by_level' END AS t, "
                f"CASE WHEN g = 0 THEN {_json('lateness', {'group': 'grp'})} "
                f"ELSE {_json('lateness_by_level', {})} END AS j FROM (SELECT grouping(grp) AS g, grp, "
                "topic, level, " + ", ".join(f"{e} AS {k}" for k, e in late_aggs.items()) +
                " FROM {late} GROUP BY GROUPING SETS ((grp, topic, level), (level)))")

    def statement(uses: tuple[str, ...], sql: str) -> str:
        """sql with the parts it uses (and theirs) as CTEs; a checkpointed part by its view."""
        order: list[str] = []

        def need(name: str) -> None:
            if name in order or name in checkpointed:
                return
            for dep in parts[name][0]:
                need(dep)
            order.append(name)

        for name in uses:
            need(name)
        names = {name: checkpointed.get(name, name) for name in parts}
        with_ = ", ".join(f"{name} AS ({parts[name][1].format(**names)})" for name in order)
        return (f"WITH {with_} " if with_ else "") + sql.format(**names)

    steps = [(view, statement(parts[name][0], parts[name][1])) for name, view in checkpointed.items()]
    branches = [f"SELECT '_facts' AS t, to_json(named_struct('records', count(*), 'first_store_timestamp', "
                f"min(store_timestamp), 'last_store_timestamp', max(store_timestamp))) AS j FROM {r}"]
    branches += [f"SELECT {_lit(name)} AS t, to_json(struct(*)) AS j FROM ({statement(uses, sql)})"
                 for name, (uses, sql) in tables.items()]
    branches.append(f"SELECT * FROM ({statement(*lateness)})")
    query = "\nUNION ALL ".join(branches)
    if one_partition:
        # two tasks for the two cores: one per branch would deserialize the whole job's
        # plan (every branch's) once per branch
        query = f"SELECT /*+ COALESCE(2) */ * FROM ({query})"
    return steps, query


# the parts of the analysis that several tables use: checkpointed (see analysis_sql), in this order
_CHECKPOINTED = ("c", "cp", "facts", "fm")
_OFFSETS_SCHEMA = "o_topic string, o_group string, o_queue_id int, committed bigint, o_broker string"
_CQ_SCHEMA = "cq_broker string, cq_topic string, cq_qid int, cq_max bigint"


@dataclass(frozen=True)
class BrokerInput:
    """One broker's snapshot (or store) in a cluster's analysis: its commit log, its
    consumer offset table and its consume queues' max offsets (from the manifest)."""
    name: str
    path: str
    offset_table: dict
    queue_max_offsets: dict


_VIEW_IDS = itertools.count(1)


@dataclass
class Analysis:
    """The analysis of one snapshot: the SQL of its shared parts and of its tables over
    temp views of its inputs (``analysis_sql``), and the Pulsar redelivery table (from
    the subscriptions file; no record holds it). ``collect`` runs it; its views and
    caches are dropped then."""

    spark: object
    steps: list[tuple[str, str]]
    sql: str
    redeliveries: list[dict]
    views: list[str] = field(default_factory=list)
    checkpoints: list = field(default_factory=list)
    ends_with_session: bool = False

    def collect(self, progress=lambda msg: None) -> tuple[dict, dict]:
        """(totals, tables as Arrow), computed by ONE Spark action (and the one-row job
        of "now"): every table's rows as JSON, sorted here by each table's order. The
        four counts are the sums of the per-group table (every send-back's group and
        topic is in it) and of produced per topic."""
        progress(f"computing the {len(TABLES)} tables in one Spark job")
        rows: dict[str, list[dict]] = {name: [] for name in ("_facts", *TABLES)}
        try:
            for view, sql in self.steps:           # lazy: planned now, computed by the query
                # A checkpoint is a leaf in the plans that use it; a view of SQL text (or of a
                # cached frame) would bring its whole plan, analysed again, everywhere it is named.
                df = _query(self.spark, sql).localCheckpoint(eager=False)
                df.createOrReplaceTempView(view)
                self.views.append(view)
                self.checkpoints.append(df)
            collected = _query(self.spark, self.sql).collect()
        finally:
            self.release()
        for r in collected:
            rows[r[0]].append(json.loads(r[1]))
        rows["redeliveries"] = [dict(r) for r in self.redeliveries]
        arrow = {}
        for name in TABLES:
            ordered = sorted(rows[name], key=_sort_key(_ORDER[name])) if _ORDER[name] else rows[name]
            arrow[name] = pa.Table.from_pylist(ordered, schema=arrow_schema(name))
        facts = rows["_facts"][0]
        pg = rows["per_group"]
        totals = {"produced": sum(r.get("produced") or 0 for r in rows["produced_by_topic"]),
                  "succeeded": sum(r["succeeded"] for r in pg), "dead_lettered": sum(r["dead_lettered"] for r in pg),
                  "send_backs": sum(r["send_backs"] for r in pg), "records": facts["records"],
                  "first_store_timestamp": facts.get("first_store_timestamp"),
                  "last_store_timestamp": facts.get("last_store_timestamp")}
        return totals, arrow

    def release(self) -> None:
        """Drop the checkpoints and temp views, newest first (a long-lived session, a
        Connect server, would otherwise keep every run's). Nothing to do when the session
        ends with the analysis (``ends_with_session``): it takes them along."""
        from .session import is_remote

        if self.ends_with_session:
            self.checkpoints, self.views = [], []
            return
        for df in reversed(self.checkpoints):
            if is_remote(df.sparkSession):
                # a Connect server holds a checkpoint until the client lets it go (here, or
                # when the session closes)
                df.unpersist()
            else:                              # a local checkpoint is its RDD, kept in the block manager
                df._jdf.queryExecution().logical().rdd().unpersist(False)
        for view in reversed(self.views):
            self.spark.catalog.dropTempView(view)
        self.checkpoints, self.views = [], []


def _query(spark, sql: str):
    """The DataFrame of a query. PySpark's Connect client runs ``spark.sql`` as a command
    at once (the server parses and analyses it) and sends the same SQL again with the
    action, to be analysed again: here the query goes with its action only, analysed
    once (measured: a second of the server's CPU per warm analysis)."""
    from .session import is_remote

    if is_remote(spark):
        from pyspark.sql.connect.dataframe import DataFrame
        from pyspark.sql.connect.plan import SQL

        return DataFrame(SQL(sql), spark)
    return spark.sql(sql)


def arrow_schema(table: str) -> pa.Schema:
    return pa.schema([pa.field(name, _ARROW[typ], nullable) for name, typ, nullable in TABLE_SCHEMAS[table]])


def _sort_key(columns: tuple[str, ...]):
    """Spark's ascending order with nulls first (strings by code point, as by UTF-8 bytes)."""
    def key(row: dict):
        return tuple((row.get(c) is not None, row.get(c) if row.get(c) is not None else 0) for c in columns)
    return key


def decode_inputs(inputs: list[BrokerInput], local_max_bytes: int | None, damage_reported: bool = True) -> list:
    """Each broker's commit log decoded here as Arrow (``read_commitlog_arrow``), or None
    for one too large for that (its executors read it)."""
    from .datasource import read_commitlog_arrow

    return [read_commitlog_arrow(b.path, READ_COLUMNS, local_max_bytes=local_max_bytes,
                                 damage_reported=damage_reported) for b in inputs]


def analyze(spark, path: str, offset_table: dict, *, delay_levels_ms: list[int] | None = None,
            queue_max_offsets: dict[tuple[str, int], int] | None = None, top_n: int = 10,
            progress=lambda msg: None, damage_reported: bool = False,
            subscriptions_doc: dict | None = None, brokers: list[BrokerInput] | None = None,
            local_max_bytes: int | None = None, decoded: list | None = None,
            ends_with_session: bool = False) -> Analysis:
    """The analysis of the snapshot (or store) at ``path`` (``damage_reported``: see
    ``read_commitlog``; ``subscriptions_doc``: its config/subscriptions.json, whose
    Pulsar redelivery counts are in no record). ``brokers``: a cluster's snapshots, in
    broker order (then ``path``, ``offset_table`` and ``queue_max_offsets`` are
    broker-a's, its first). Queues, offsets and log positions are each broker's own;
    messages and copies are matched across brokers (offsetMsgIds name their broker).
    ``local_max_bytes``: see ``read_commitlog``; ``decoded``: ``decode_inputs`` of the
    brokers, done already; ``ends_with_session``: the session is closed after the
    analysis (see ``Analysis.release``). Nothing runs until ``collect``."""
    from .datasource import read_commitlog
    from .session import is_remote, register_source

    delays = delay_levels_ms or parse_delay_levels(DEFAULT_DELAY_LEVELS)
    inputs = brokers or [BrokerInput("broker-a", path, offset_table, queue_max_offsets or {})]
    tables = decoded
    if tables is None:
        progress("reading the commit log" + (f"s of {len(inputs)} brokers" if len(inputs) > 1 else ""))
        tables = decode_inputs(inputs, local_max_bytes, damage_reported)
    small = all(t is not None for t in tables)
    if small:
        # small: one local relation in one partition (see the module notes)
        records = _one_partition(spark, pa.concat_tables([
            t.append_column("broker", pa.array([b.name] * t.num_rows, pa.string()))
             .append_column("broker_idx", pa.array([i] * t.num_rows, pa.int32()))
            for i, (b, t) in enumerate(zip(inputs, tables))]))
    else:
        if is_remote(spark):                   # the executors read it with the data source
            register_source(spark)
        records = None
        for i, b in enumerate(inputs):
            one = (read_commitlog(spark, b.path, READ_COLUMNS, damage_reported=damage_reported,
                                  local_max_bytes=local_max_bytes, progress=progress)
                   .selectExpr("*", f"{_lit(b.name)} AS broker", f"{i} AS broker_idx"))
            records = one if records is None else records.unionByName(one)
    offsets = _rows_table([(t, g, q, o, b.name) for b in inputs for (t, g), qs in
                           normalize_offsets(b.offset_table).items() for q, o in qs.items()], _OFFSETS_SCHEMA)
    cq = _rows_table([(b.name, t, q, m) for b in inputs for (t, q), m in (b.queue_max_offsets or {}).items()],
                     _CQ_SCHEMA)
    n = next(_VIEW_IDS)
    views = {"records": f"rmq_records_{n}", "offsets": f"rmq_offsets_{n}", "cq": f"rmq_cq_{n}"}
    steps, sql = analysis_sql(views, delays, top_n, one_partition=small, view_prefix=f"rmq_{n}")
    records.createOrReplaceTempView(views["records"])
    _one_partition(spark, offsets).createOrReplaceTempView(views["offsets"])
    _one_partition(spark, cq).createOrReplaceTempView(views["cq"])
    redeliveries = [{"group": r["group"], "topic": r["topic"], "redeliveries": r["redeliveries"],
                     "redelivered_messages": r["redelivered_messages"],
                     "max_redelivery_count": r["max_redelivery_count"]} for r in redelivery_stats(subscriptions_doc)]
    return Analysis(spark, steps, sql, redeliveries, list(views.values()), ends_with_session=ends_with_session)


def _rows_table(rows: list[tuple], ddl: str) -> pa.Table:
    names, types = zip(*(p.split() for p in ddl.split(",")))
    columns = list(zip(*rows)) or [()] * len(names)
    return pa.table([pa.array(list(c), _ARROW[t]) for c, t in zip(columns, types)], names=list(names))


def _spark_schema(schema: pa.Schema):
    """The Spark schema of an Arrow one (a StructType: a DDL string would be parsed by
    the JVM, or by the Connect server in a round trip of its own)."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    types = {pa.int64(): LongType(), pa.int32(): IntegerType(), pa.string(): StringType()}
    return StructType([StructField(f.name, types[f.type], True) for f in schema])


def _one_partition(spark, table: pa.Table):
    """The table as a DataFrame in one partition: operators over it and over each other
    then need no exchange (Spark keeps a single partition through projections, filters,
    joins, aggregates and windows; unions are made one partition again by the query)."""
    from .session import is_remote
    from .sql_conf import session_conf

    if is_remote(spark):                       # Connect sends an Arrow table as a local relation
        return spark.createDataFrame(table, schema=_spark_schema(table.schema)).coalesce(1)
    with session_conf(spark, {"spark.sql.execution.arrow.localRelationThreshold": "0"}):
        return spark.createDataFrame(table, schema=_spark_schema(table.schema)).coalesce(1)
