"""The analyses, as Spark DataFrames over one snapshot.

Every rule here is ``accounting``'s, written as Spark expressions (classification,
message keys, consumed / sent back, the four counts); tests run both on the same store
and compare. The rest builds on the same derived frames:

  messages     one row per original (the record a key names)
  copies       retry / dead-letter records with their resolved key and business topic
  deliveries   what each group can consume: originals of the topics it consumes
               (attempt 0) and its %RETRY% copies (attempt = reconsumeTimes), each with
               ``consumed`` from the offset table
  send_backs   send-back records of each group (attempt = reconsumeTimes, dlq flag)

Lateness pairs each SCHEDULE_TOPIC_XXXX record with the copy re-stored from it (same
destination topic and queue, UNIQ_KEY, ORIGIN_MESSAGE_ID, reconsumeTimes and born time;
the n-th of each side when several match): due = schedule store time + delay(level),
late = copy store time - due. "Now" is the newest store timestamp in the snapshot, so
ages mean the same on a virtual clock.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import pyarrow as pa

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from rocketmq_emulator.store import DEFAULT_MESSAGE_DELAY_LEVEL, parse_delay_table
from rocketmq_emulator.store.accounting import (NOT_BUSINESS_PREFIXES, PULSAR_DLQ_SUFFIX, PULSAR_RETRY_SUFFIX, Kind,
                                                normalize_offsets, redelivery_stats)
from rocketmq_emulator.store.records import DLQ_PREFIX, POP_RETRY_SEPARATOR, RETRY_PREFIX, SCHEDULE_TOPIC, SYSTEM_TOPICS

from .datasource import read_commitlog

__all__ = ["DEFAULT_DELAY_LEVELS", "parse_delay_levels", "Analysis", "analyze", "classify_expr", "group_expr",
           "READ_COLUMNS", "TABLES", "BrokerInput"]

DEFAULT_DELAY_LEVELS = DEFAULT_MESSAGE_DELAY_LEVEL      # the store's messageDelayLevel (defined there)

# The analyses need no properties map and no body: reading only these columns skips
# decoding them (their types come from datasource.spark_schema).
READ_COLUMNS = ["physical_offset", "store_timestamp", "born_timestamp", "topic", "queue_id", "queue_offset",
                "offset_msg_id", "uniq_key", "origin_message_id", "retry_topic", "real_topic", "real_qid",
                "reconsume_times", "tags", "keys", "pulsar_chunk", "sys_flag", "body_size"]

TABLES = ("per_group", "retried", "funnel", "lateness", "lateness_by_level", "time_to_dlq", "poison",
          "duplicates", "lag", "pinning", "produced_by_topic", "redeliveries", "copies_by_broker")


def parse_delay_levels(text: str) -> list[int]:
    """RocketMQ messageDelayLevel ("1s 5s ... 2h") → ms per level (level = index + 1),
    as a list the report may extend; the store's parser (ValueError on a bad table)."""
    return list(parse_delay_table(text))


def _business(c: Column) -> Column:
    cond = c.isNotNull() & (c != "") & ~c.isin(*sorted(SYSTEM_TOPICS))
    for p in NOT_BUSINESS_PREFIXES:
        cond = cond & ~c.startswith(p)
    return cond


def classify_expr() -> Column:
    """accounting.classify, as a Spark column."""
    topic, real = F.col("topic"), F.col("real_topic")
    tx = F.col("sys_flag").bitwiseAND(12)
    chunk = F.split(F.col("pulsar_chunk"), "/")             # a chunk before its message's last: not a message
    partial_chunk = F.col("pulsar_chunk").isNotNull() & (chunk.getItem(0).cast("int") < chunk.getItem(1).cast("int") - 1)
    return (F.when(tx.isin(4, 12), Kind.OTHER.value)
            .when(partial_chunk, Kind.OTHER.value)
            .when(topic == SCHEDULE_TOPIC,
                  F.when(real.startswith(RETRY_PREFIX), Kind.RETRY_SCHEDULED.value)
                  .when(_business(real), Kind.DELAYED_ORIGINAL.value).otherwise(Kind.OTHER.value))
            .when(topic.startswith(RETRY_PREFIX),
                  F.when(real.eqNullSafe(topic), Kind.RETRY_DELIVERY.value).otherwise(Kind.RETRY_DIRECT.value))
            .when(topic.startswith(DLQ_PREFIX), Kind.DEAD_LETTER.value)
            .when(_business(topic),
                  F.when(real.eqNullSafe(topic), Kind.DELAYED_DELIVERY.value)
                  .when(real.isNotNull() & (real != "") & topic.endswith(PULSAR_DLQ_SUFFIX),
                        Kind.DEAD_LETTER.value)                                              # Pulsar's
                  .when(real.isNotNull() & (real != "") & topic.endswith(PULSAR_RETRY_SUFFIX),
                        Kind.RETRY_DIRECT.value)
                  .otherwise(Kind.ORIGINAL.value))
            .otherwise(Kind.OTHER.value))


def group_expr() -> Column:
    """accounting.group_of, as a Spark column."""
    kind = F.col("kind")
    return (F.when(kind == Kind.RETRY_SCHEDULED.value, F.expr(f"substring(real_topic, {len(RETRY_PREFIX) + 1})"))
            .when(kind.isin(Kind.RETRY_DELIVERY.value, Kind.RETRY_DIRECT.value),     # (5.x: %RETRY%<group>+<topic>)
                  F.when(F.col("topic").startswith(RETRY_PREFIX), F.substring_index(
                      F.expr(f"substring(topic, {len(RETRY_PREFIX) + 1})"), POP_RETRY_SEPARATOR, 1))
                  .otherwise(_pulsar_letter_group()))
            .when(kind == Kind.DEAD_LETTER.value,
                  F.when(F.col("topic").startswith(DLQ_PREFIX), F.expr(f"substring(topic, {len(DLQ_PREFIX) + 1})"))
                  .otherwise(_pulsar_letter_group())))


def _pulsar_letter_group() -> Column:
    """accounting.pulsar_letter_group, as a Spark column."""
    n = (f"(CASE WHEN endswith(topic, '{PULSAR_DLQ_SUFFIX}') THEN {len(PULSAR_DLQ_SUFFIX)} "
         f"ELSE {len(PULSAR_RETRY_SUFFIX)} END)")
    default_form = F.col("topic").startswith(F.concat(F.col("real_topic"), F.lit("-"))) & F.expr(
        f"length(topic) - {n} > length(real_topic) + 1")
    return (F.when(default_form, F.expr(f"substring(topic, length(real_topic) + 2, "
                                        f"length(topic) - length(real_topic) - 1 - {n})"))
            .otherwise(F.expr(f"substring_index(substring(topic, 1, length(topic) - {n}), '|', -1)")))


_OFFSETS_SCHEMA = StructType([StructField("o_topic", StringType()), StructField("o_group", StringType()),
                              StructField("o_queue_id", IntegerType()), StructField("committed", LongType()),
                              StructField("o_broker", StringType())])


@dataclass(frozen=True)
class BrokerInput:
    """One broker's snapshot (or store) in a cluster's analysis: its commit log, its
    consumer offset table and its consume queues' max offsets (from the manifest)."""
    name: str
    path: str
    offset_table: dict
    queue_max_offsets: dict


@dataclass
class Analysis:
    """The analysis of one snapshot: a one-row frame of facts (records, first / last
    store time) and one small DataFrame per table in TABLES. ``collect`` runs them."""

    facts: DataFrame
    tables: dict[str, DataFrame]
    # The frames cached for the tables to share; released once the tables are collected
    # (a long-lived session, a Connect server, would otherwise keep every run's).
    cached: list[DataFrame] = field(default_factory=list)

    def collect(self, progress=lambda msg: None) -> tuple[dict, dict]:
        """(totals, tables as Arrow), computed by ONE Spark action: every table's rows
        as JSON in one union, so the frames they share are read once and Spark's fixed
        cost per job (scheduling, planning, a stage per exchange) is paid once, not per
        table. A union keeps each branch's partitions in order, so each table keeps its
        orderBy. The four counts are the sums of the per-group table (every send-back's
        group and topic is in it) and of produced per topic."""
        progress(f"computing the {len(TABLES)} tables in one Spark job")
        frames = {"_facts": self.facts, **{name: self.tables[name] for name in TABLES}}
        union = None
        for name, df in frames.items():
            one = df.select(F.lit(name).alias("table"), F.to_json(F.struct(*[F.col(c) for c in df.columns]))
                            .alias("row"))
            union = one if union is None else union.unionAll(one)
        rows: dict[str, list[dict]] = {name: [] for name in frames}
        try:
            collected = union.collect()
        finally:
            self.release()
        for r in collected:
            rows[r["table"]].append(json.loads(r["row"]))
        arrow = {name: pa.Table.from_pylist(rows[name], schema=to_arrow_schema(self.tables[name].schema))
                 for name in TABLES}
        facts = rows["_facts"][0]
        pg = rows["per_group"]
        totals = {"produced": sum(r.get("produced") or 0 for r in rows["produced_by_topic"]),
                  "succeeded": sum(r["succeeded"] for r in pg), "dead_lettered": sum(r["dead_lettered"] for r in pg),
                  "send_backs": sum(r["send_backs"] for r in pg), "records": facts["records"],
                  "first_store_timestamp": facts.get("first_store_timestamp"),
                  "last_store_timestamp": facts.get("last_store_timestamp")}
        return totals, arrow


    def release(self) -> None:
        """Drop the cached frames (the tables can still be computed, uncached)."""
        for df in self.cached:
            df.unpersist()
        self.cached = []


def _pct(col: str, p: float) -> Column:
    return F.expr(f"percentile({col}, {p})")


def analyze(spark: SparkSession, path: str, offset_table: dict, *, delay_levels_ms: list[int] | None = None,
            queue_max_offsets: dict[tuple[str, int], int] | None = None, top_n: int = 10,
            progress=lambda msg: None, damage_reported: bool = False,
            subscriptions_doc: dict | None = None, brokers: list[BrokerInput] | None = None,
            local_max_bytes: int | None = None) -> Analysis:
    """Build every analysis of the snapshot (or store) at ``path`` (``damage_reported``:
    see ``read_commitlog``; ``subscriptions_doc``: its config/subscriptions.json, whose
    Pulsar redelivery counts are in no record). ``brokers``: a cluster's snapshots, in
    broker order (then ``path``, ``offset_table`` and ``queue_max_offsets`` are
    broker-a's, its first). Queues, offsets and log positions are each broker's own;
    messages and copies are matched across brokers (offsetMsgIds name their broker).
    ``local_max_bytes``: see ``read_commitlog``."""
    delays = delay_levels_ms or parse_delay_levels(DEFAULT_DELAY_LEVELS)
    inputs = brokers or [BrokerInput("broker-a", path, offset_table, queue_max_offsets or {})]
    progress("reading the commit log" + (f"s of {len(inputs)} brokers" if len(inputs) > 1 else ""))
    raw = None
    for i, b in enumerate(inputs):
        one = (read_commitlog(spark, b.path, READ_COLUMNS, damage_reported=damage_reported,
                              local_max_bytes=local_max_bytes, progress=progress)
               .withColumn("broker", F.lit(b.name)).withColumn("broker_idx", F.lit(i)))
        raw = one if raw is None else raw.unionByName(one)
    c = raw.withColumn("kind", classify_expr()).withColumn("group", group_expr()).cache()
    # The newest store time is "now" for ages and overdue checks: a one-row frame joined
    # where it is needed, not an action of its own.
    facts = c.agg(F.count("*").alias("records"), F.min("store_timestamp").alias("first_store_timestamp"),
                  F.max("store_timestamp").alias("last_store_timestamp"))
    now_df = facts.select(F.coalesce("last_store_timestamp", F.lit(0)).alias("now"))
    progress("classifying")

    offsets = spark.createDataFrame(
        [(t, g, q, o, b.name) for b in inputs for (t, g), qs in normalize_offsets(b.offset_table).items()
         for q, o in qs.items()], _OFFSETS_SCHEMA)
    kind = F.col("kind")
    messages = (c.filter(kind.isin(Kind.ORIGINAL.value, Kind.DELAYED_DELIVERY.value))
                .select(F.col("offset_msg_id").alias("key"), F.col("topic").alias("m_topic"), "queue_id",
                        "queue_offset", "uniq_key", F.col("store_timestamp").alias("first_store"),
                        "physical_offset", "keys", "tags", "broker", "broker_idx"))
    # the first message with a UNIQ_KEY: in broker order, then log order (accounting's order)
    by_uniq = (messages.filter(F.col("uniq_key").isNotNull())
               .withColumn("rn", F.row_number().over(Window.partitionBy("uniq_key")
                                                     .orderBy("broker_idx", "physical_offset")))
               .filter("rn = 1").select("uniq_key", "key", "m_topic", "broker"))
    u1 = by_uniq.select(F.col("uniq_key").alias("u1_uniq"), F.col("key").alias("u1_key"),
                        F.col("m_topic").alias("u1_topic"), F.col("broker").alias("u1_broker"))
    u2 = by_uniq.select(F.col("uniq_key").alias("u2_uniq"), F.col("key").alias("u2_key"),
                        F.col("m_topic").alias("u2_topic"), F.col("broker").alias("u2_broker"))
    m1 = messages.select(F.col("key").alias("m1_key"), F.col("m_topic").alias("m1_topic"),
                         F.col("broker").alias("m1_broker"))
    sb_kinds = (Kind.RETRY_SCHEDULED.value, Kind.RETRY_DIRECT.value, Kind.DEAD_LETTER.value)
    retry_kinds = (Kind.RETRY_DELIVERY.value, Kind.RETRY_DIRECT.value)
    copies = (c.filter(kind.isin(*sb_kinds, *retry_kinds))
              .join(m1, F.col("origin_message_id") == F.col("m1_key"), "left")
              .join(u1, F.col("origin_message_id") == F.col("u1_uniq"), "left")
              .join(u2, F.col("uniq_key") == F.col("u2_uniq"), "left")
              .withColumn("key", F.coalesce("m1_key", "u1_key", "u2_key",
                                            F.concat(F.lit("?"), F.coalesce("origin_message_id", "uniq_key",
                                                                            "offset_msg_id"))))
              .withColumn("btopic", F.when(F.col("m1_key").isNotNull(), F.col("m1_topic"))
                          .when(F.col("u1_key").isNotNull(), F.col("u1_topic"))
                          .when(F.col("u2_key").isNotNull(), F.col("u2_topic"))
                          .otherwise(F.coalesce("retry_topic", F.lit(""))))
              .withColumn("message_broker", F.coalesce("m1_broker", "u1_broker", "u2_broker"))
              .drop("m1_key", "m1_topic", "u1_uniq", "u1_key", "u1_topic", "u2_uniq", "u2_key", "u2_topic",
                    "m1_broker", "u1_broker", "u2_broker")
              .cache())
    subscribed = (offsets.filter(_business(F.col("o_topic"))).select(F.col("o_topic").alias("s_topic"),
                                                                     F.col("o_group").alias("s_group"))
                  .union(copies.select(F.col("btopic").alias("s_topic"), F.col("group").alias("s_group")))
                  .distinct())
    deliveries = (
        messages.join(subscribed, messages.m_topic == subscribed.s_topic)
        .select(F.col("s_group").alias("group"), "key", F.col("m_topic").alias("btopic"),
                F.col("m_topic").alias("src_topic"), "queue_id", "queue_offset", F.lit(0).alias("attempt"),
                "uniq_key", "broker")
        .unionByName(copies.filter(kind.isin(*retry_kinds)).select(
            "group", "key", "btopic", F.col("topic").alias("src_topic"), "queue_id", "queue_offset",
            F.col("reconsume_times").alias("attempt"), "uniq_key", "broker"))
        .join(offsets, (F.col("src_topic") == F.col("o_topic")) & (F.col("group") == F.col("o_group"))
              & (F.col("queue_id") == F.col("o_queue_id")) & (F.col("broker") == F.col("o_broker")), "left")
        .withColumn("consumed", F.coalesce("committed", F.lit(-1)) > F.col("queue_offset"))
        .drop("o_topic", "o_group", "o_queue_id", "o_broker")
        .cache())
    send_backs = (copies.filter(kind.isin(*sb_kinds))
                  .select("group", "key", "btopic", F.col("reconsume_times").alias("attempt"),
                          (kind == Kind.DEAD_LETTER.value).alias("dlq"), "store_timestamp", "physical_offset")
                  .cache())
    progress("counting produced / succeeded / dead-lettered / send-backs")

    sb_next = send_backs.select("group", "key", (F.col("attempt") - 1).alias("attempt"))
    dead_keys = send_backs.filter("dlq").select("group", "key")     # a dead letter is not also a success
    ok = (deliveries.filter("consumed").join(sb_next, ["group", "key", "attempt"], "left_anti")
          .join(dead_keys, ["group", "key"], "left_anti"))
    succeeded = ok.select("group", "key", "btopic").distinct().groupBy("group", "btopic").agg(
        F.count("*").alias("succeeded"))
    dead = (send_backs.filter("dlq").select("group", "key", "btopic").distinct().groupBy("group", "btopic")
            .agg(F.count("*").alias("dead_lettered")))
    sb_count = send_backs.groupBy("group", "btopic").agg(F.count("*").alias("send_backs"))
    produced = (c.filter(kind.isin(Kind.ORIGINAL.value, Kind.DELAYED_ORIGINAL.value))
                .select(F.when(kind == Kind.ORIGINAL.value, F.col("topic")).otherwise(F.col("real_topic"))
                        .alias("btopic"))
                .groupBy("btopic").agg(F.count("*").alias("produced")))
    per_group = (subscribed.select(F.col("s_group").alias("group"), F.col("s_topic").alias("btopic"))
                 .join(produced, "btopic", "left").join(succeeded, ["group", "btopic"], "left")
                 .join(dead, ["group", "btopic"], "left").join(sb_count, ["group", "btopic"], "left")
                 .na.fill(0, ["produced", "succeeded", "dead_lettered", "send_backs"])
                 .withColumn("in_flight", F.col("produced") - F.col("succeeded") - F.col("dead_lettered"))
                 .select("group", F.col("btopic").alias("topic"), "produced", "succeeded", "dead_lettered",
                         "send_backs", "in_flight")
                 .orderBy("group", "topic"))
    retried = (send_backs.filter(~F.col("dlq")).groupBy("group", "key", "btopic")
               .agg(F.countDistinct("attempt").alias("retries"))
               .groupBy("group", F.col("btopic").alias("topic"), "retries").agg(F.count("*").alias("messages"))
               .orderBy("group", "topic", "retries"))

    progress("retry funnel")
    dk = ["group", "btopic", "attempt"]
    funnel = (
        deliveries.groupBy(*dk).agg(F.countDistinct("key").alias("delivered"),
                                    F.countDistinct(F.when(F.col("consumed"), F.col("key"))).alias("consumed"))
        .join(ok.groupBy(*dk).agg(F.countDistinct("key").alias("succeeded")), dk, "full")
        .join(send_backs.withColumn("attempt", F.col("attempt") - 1).groupBy(*dk).agg(
            F.countDistinct(F.when(~F.col("dlq"), F.col("key"))).alias("sent_back"),
            F.countDistinct(F.when(F.col("dlq"), F.col("key"))).alias("dead_lettered")), dk, "full")
        .na.fill(0, ["delivered", "consumed", "succeeded", "sent_back", "dead_lettered"])
        .select("group", F.col("btopic").alias("topic"), F.col("attempt").alias("reconsume_times"), "delivered",
                "consumed", "succeeded", "sent_back", "dead_lettered")
        .orderBy("group", "topic", "reconsume_times"))

    progress("delivery lateness per delay level")
    delay_df = spark.createDataFrame([(i + 1, ms) for i, ms in enumerate(delays)], "level int, delay_ms bigint")
    # (a due message is re-stored by the broker that held it: pairs never cross brokers)
    pair_keys = ["p_broker", "p_topic", "p_qid", "p_uniq", "p_origin", "p_recon", "p_born"]
    sched = (c.filter(F.col("topic") == SCHEDULE_TOPIC)
             .select((F.col("queue_id") + 1).alias("level"), F.col("store_timestamp").alias("s_store"),
                     F.col("broker").alias("p_broker"),
                     F.col("real_topic").alias("p_topic"), F.col("real_qid").alias("p_qid"),
                     F.col("uniq_key").alias("p_uniq"), F.col("origin_message_id").alias("p_origin"),
                     F.col("reconsume_times").alias("p_recon"), F.col("born_timestamp").alias("p_born"),
                     F.when(kind == Kind.RETRY_SCHEDULED.value, F.col("group")).otherwise(F.lit(""))
                     .alias("group"),
                     F.when(kind == Kind.RETRY_SCHEDULED.value, F.coalesce("retry_topic", F.lit("")))
                     .otherwise(F.col("real_topic")).alias("topic"),
                     F.col("physical_offset").alias("s_phys"))
             .join(F.broadcast(delay_df), "level", "left")
             .withColumn("due", F.col("s_store") + F.coalesce("delay_ms", F.lit(1000)))
             .withColumn("rn", F.row_number().over(Window.partitionBy(*pair_keys).orderBy("s_phys"))))
    restored = (c.filter(F.col("real_topic").eqNullSafe(F.col("topic")))
                .select(F.col("broker").alias("r_broker"), F.col("topic").alias("r_topic"),
                        F.col("queue_id").alias("r_qid"),
                        F.col("uniq_key").alias("r_uniq"), F.col("origin_message_id").alias("r_origin"),
                        F.col("reconsume_times").alias("r_recon"), F.col("born_timestamp").alias("r_born"),
                        F.col("store_timestamp").alias("r_store"), F.col("physical_offset").alias("r_phys"))
                .withColumn("r_rn", F.row_number().over(
                    Window.partitionBy("r_broker", "r_topic", "r_qid", "r_uniq", "r_origin", "r_recon", "r_born")
                    .orderBy("r_phys"))))
    cond = ((F.col("p_broker") == F.col("r_broker")) & (F.col("p_topic").eqNullSafe(F.col("r_topic")))
            & (F.col("p_qid").eqNullSafe(F.col("r_qid")))
            & (F.col("p_uniq").eqNullSafe(F.col("r_uniq"))) & (F.col("p_origin").eqNullSafe(F.col("r_origin")))
            & (F.col("p_recon") == F.col("r_recon")) & (F.col("p_born") == F.col("r_born"))
            & (F.col("rn") == F.col("r_rn")))
    paired = (sched.join(restored, cond, "left")
              .withColumn("late_ms", F.col("r_store") - F.col("due"))
              .withColumn("pending", F.col("r_store").isNull())
              .crossJoin(now_df)
              .withColumn("overdue", F.col("pending") & (F.col("due") < F.col("now"))))

    def late_agg(df, keys):
        return (df.groupBy(*keys).agg(
            F.count("*").alias("scheduled"), F.count("r_store").alias("delivered"),
            F.sum(F.col("pending").cast("int")).alias("pending"),
            F.sum(F.col("overdue").cast("int")).alias("overdue"),
            F.first("delay_ms", ignorenulls=True).alias("delay_ms"),
            _pct("late_ms", 0.5).alias("p50_ms"), _pct("late_ms", 0.99).alias("p99_ms"),
            F.max("late_ms").alias("max_ms")).orderBy(*keys))

    lateness = late_agg(paired, ["group", "topic", "level"])
    lateness_by_level = late_agg(paired, ["level"])

    progress("time to DLQ, poison messages, duplicates")
    time_to_dlq = (send_backs.filter("dlq").join(messages.select("key", "first_store"), "key")
                   .withColumn("ms", F.col("store_timestamp") - F.col("first_store"))
                   .groupBy("group", F.col("btopic").alias("topic"))
                   .agg(F.count("*").alias("dead_lettered"), _pct("ms", 0.5).alias("p50_ms"),
                        _pct("ms", 0.99).alias("p99_ms"), F.max("ms").alias("max_ms"), F.min("ms").alias("min_ms"))
                   .orderBy("group", "topic"))
    poison = (send_backs.groupBy("group", "key", "btopic")
              .agg(F.count("*").alias("send_backs"), F.max("attempt").alias("max_reconsume_times"),
                   F.max(F.col("dlq").cast("int")).alias("dead_lettered"),
                   F.max("store_timestamp").alias("last_send_back"))
              .join(messages.select("key", "uniq_key", "keys", "tags", "first_store"), "key", "left")
              .withColumn("rank", F.row_number().over(
                  Window.partitionBy("group").orderBy(F.desc("send_backs"), F.desc("dead_lettered"), "key")))
              .filter(F.col("rank") <= top_n)
              .select("group", F.col("btopic").alias("topic"), "rank", "key", "uniq_key", "keys", "tags",
                      "send_backs", "max_reconsume_times", "dead_lettered", "first_store", "last_send_back")
              .orderBy("group", "rank"))
    duplicates = (deliveries.filter(F.col("uniq_key").isNotNull())
                  .groupBy("group", F.col("btopic").alias("topic"), "uniq_key", F.col("attempt")
                           .alias("reconsume_times"))
                  .agg(F.count("*").alias("copies"), F.countDistinct("key").alias("messages"))
                  .filter("copies > 1").orderBy("group", "topic", "uniq_key", "reconsume_times"))

    progress("consumer lag and pinning messages")
    qmax = c.groupBy(F.col("broker").alias("q_broker"), F.col("topic").alias("q_topic"),
                     F.col("queue_id").alias("q_qid")).agg((F.max("queue_offset") + 1).alias("log_max"))
    cq_rows = [(b.name, t, q, m) for b in inputs for (t, q), m in (b.queue_max_offsets or {}).items()]
    cq = spark.createDataFrame(cq_rows, "cq_broker string, cq_topic string, cq_qid int, cq_max bigint")
    lag = (offsets.join(qmax, (F.col("o_topic") == F.col("q_topic")) & (F.col("o_queue_id") == F.col("q_qid"))
                        & (F.col("o_broker") == F.col("q_broker")), "left")
           .join(cq, (F.col("o_topic") == F.col("cq_topic")) & (F.col("o_queue_id") == F.col("cq_qid"))
                 & (F.col("o_broker") == F.col("cq_broker")), "left")
           .withColumn("max_offset", F.coalesce("log_max", "cq_max", "committed"))
           .withColumn("lag", F.greatest(F.col("max_offset") - F.col("committed"), F.lit(0)))
           .select(F.col("o_group").alias("group"), F.col("o_topic").alias("topic"),
                   F.col("o_broker").alias("broker"), F.col("o_queue_id").alias("queue_id"), "committed",
                   "max_offset", "lag")
           .orderBy("group", "topic", "broker", "queue_id"))
    pinned = (lag.filter("lag > 0")
              .withColumn("queue_min", F.min("committed").over(Window.partitionBy("broker", "topic", "queue_id")))
              .join(c.select(F.col("broker").alias("c_broker"), F.col("topic").alias("c_topic"),
                             F.col("queue_id").alias("c_qid"), F.col("queue_offset").alias("c_qoff"),
                             "physical_offset", "uniq_key", "keys", "store_timestamp", "reconsume_times"),
                    (F.col("broker") == F.col("c_broker")) & (F.col("topic") == F.col("c_topic"))
                    & (F.col("queue_id") == F.col("c_qid")) & (F.col("committed") == F.col("c_qoff")), "left")
              .crossJoin(now_df)
              .withColumn("age_ms", F.col("now") - F.col("store_timestamp"))
              .select("group", "topic", "broker", "queue_id", F.col("committed").alias("queue_offset"), "lag",
                      (F.col("committed") == F.col("queue_min")).alias("pins_queue_min"), "physical_offset",
                      "uniq_key", "keys", "store_timestamp", "reconsume_times", "age_ms")
              .orderBy("group", "topic", "broker", "queue_id"))
    # Where each group's retry and dead-letter copies landed, beside where their message
    # is: a client's fallback send-back puts a copy on another broker than its message's.
    copies_by_broker = (copies.filter(kind.isin(*sb_kinds))
                        .groupBy("group", F.col("btopic").alias("topic"),
                                 F.coalesce("message_broker", F.lit("?")).alias("message_broker"),
                                 F.col("broker").alias("copy_broker"))
                        .agg(F.count("*").alias("copies"), F.countDistinct("key").alias("messages"))
                        .orderBy("group", "topic", "message_broker", "copy_broker"))
    produced_by_topic = produced.select(F.col("btopic").alias("topic"), "produced").orderBy("topic")
    redeliveries = spark.createDataFrame(
        [(r["group"], r["topic"], r["redeliveries"], r["redelivered_messages"], r["max_redelivery_count"])
         for r in redelivery_stats(subscriptions_doc)],
        "group string, topic string, redeliveries bigint, redelivered_messages bigint, max_redelivery_count int")

    tables = {"per_group": per_group, "retried": retried, "funnel": funnel, "lateness": lateness,
              "lateness_by_level": lateness_by_level, "time_to_dlq": time_to_dlq, "poison": poison,
              "duplicates": duplicates, "lag": lag, "pinning": pinned, "produced_by_topic": produced_by_topic,
              "redeliveries": redeliveries, "copies_by_broker": copies_by_broker}
    return Analysis(facts, tables, cached=[c, copies, deliveries, send_backs])
