"""Broker configuration under RocketMQ's own key names.

``BrokerConfig`` attributes are snake_case; ``BrokerConfig.from_properties`` and
``load_broker_conf`` accept a real ``broker.conf`` (Java properties: ``key=value``,
``#`` comments) using RocketMQ's camelCase keys. Keys this emulator does not model are
kept in ``extra`` and ignored, as a real broker ignores keys it does not know.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from rocketmq_emulator.delay_scheduler import DelayLevels
from rocketmq_emulator.store.config import DEFAULT_MESSAGE_DELAY_LEVEL, parse_delay_table

from .errors import ConfigError
from .retry_lifecycle import TRANSACTION_CHECK_INTERVAL_MS, TRANSACTION_CHECK_MAX, TRANSACTION_TIMEOUT_MS

__all__ = ["BrokerConfig", "load_broker_conf", "parse_properties", "PERM_READ", "PERM_WRITE",
           "PERM_INHERIT", "PERM_PRIORITY"]

PERM_PRIORITY = 8
PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1

# RocketMQ key -> attribute. Only keys whose behaviour the emulator models.
_KEYS = {
    "brokerName": "broker_name",
    "brokerClusterName": "broker_cluster_name",
    "brokerId": "broker_id",
    "brokerIP1": "broker_ip",
    "listenPort": "listen_port",
    "brokerPermission": "broker_permission",
    "autoCreateTopicEnable": "auto_create_topic_enable",
    "autoCreateSubscriptionGroup": "auto_create_subscription_group",
    "defaultTopicQueueNums": "default_topic_queue_nums",
    "messageDelayLevel": "message_delay_level",
    "maxMessageSize": "max_message_size",
    "flushDiskType": "flush_disk_type",
    "storePathRootDir": "store_path_root_dir",
    "mapedFileSizeCommitLog": "maped_file_size_commit_log",
    "mappedFileSizeCommitLog": "maped_file_size_commit_log",
    "longPollingEnable": "long_polling_enable",
    "shortPollingTimeMills": "short_polling_time_mills",
    "notifyConsumerIdsChangedEnable": "notify_consumer_ids_changed_enable",
    "flushIntervalCommitLog": "flush_interval_commit_log",
    "flushConsumerOffsetInterval": "flush_consumer_offset_interval",
    "flushDelayOffsetInterval": "flush_delay_offset_interval",
    "defaultQueryMaxNum": "default_query_max_num",
    "rebalanceLockMaxLiveTime": "rebalance_lock_max_live_time",
    "traceTopicEnable": "trace_topic_enable",
    "regionId": "region_id",
    "serverChannelMaxIdleTimeSeconds": "server_channel_max_idle_time_seconds",
    "timerMaxDelaySec": "timer_max_delay_sec",
    "transactionTimeOut": "transaction_timeout",
    "transactionCheckInterval": "transaction_check_interval",
    "transactionCheckMax": "transaction_check_max",
    "enablePropertyFilter": "enable_property_filter",
    # (the emulator's own: Pulsar's in-memory redelivery counts, for fidelity tests)
    "pulsarRedeliveryCountInMemory": "redelivery_count_in_memory",
    "delayedDeliveryTickTimeMillis": "delayed_delivery_tick_time_millis",
    # Pulsar's own keys the Pulsar front models (issue 41), and the emulator's largest
    # Pulsar message (Pulsar's maxMessageSize: RocketMQ's key of that name is the 4.x limit)
    "brokerDeduplicationEnabled": "broker_deduplication_enabled",
    "brokerServiceCompactionThresholdInBytes": "broker_service_compaction_threshold_in_bytes",
    "advertisedListeners": "advertised_listeners",
    "internalListenerName": "internal_listener_name",
    "pulsarMaxMessageSize": "pulsar_max_message_size",
    # lite topics (RIP-83): the broker-wide count of (client, lite topic) subscriptions
    # and of lite topics
    "maxLiteSubscriptionCount": "max_lite_subscription_count",
    "maxLiteTopicCount": "max_lite_topic_count",
}


@dataclass(slots=True)
class BrokerConfig:
    broker_name: str = "broker-a"
    broker_cluster_name: str = "DefaultCluster"
    broker_id: int = 0
    broker_ip: str = "127.0.0.1"
    listen_port: int = 10911
    broker_permission: int = PERM_READ | PERM_WRITE
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    default_topic_queue_nums: int = 8
    message_delay_level: str = DEFAULT_MESSAGE_DELAY_LEVEL
    max_message_size: int = 4 * 1024 * 1024
    flush_disk_type: str = "ASYNC_FLUSH"
    store_path_root_dir: str | None = None
    maped_file_size_commit_log: int = 1024 * 1024 * 1024
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    notify_consumer_ids_changed_enable: bool = True
    flush_interval_commit_log: int = 500
    flush_consumer_offset_interval: int = 5000
    flush_delay_offset_interval: int = 10000
    default_query_max_num: int = 32
    rebalance_lock_max_live_time: int = 60000
    trace_topic_enable: bool = False
    region_id: str = "DefaultRegion"
    server_channel_max_idle_time_seconds: int = 120     # NettyServerConfig: 0 keeps idle connections
    timer_max_delay_sec: int = 3 * 24 * 3600            # 5.x: a timer message may wait at most this long
    # transactions: a half message's first check-back (ms after it is stored), the interval
    # between checks (ms), and how many checks before it is discarded (retry_lifecycle.py)
    transaction_timeout: int = TRANSACTION_TIMEOUT_MS
    transaction_check_interval: int = TRANSACTION_CHECK_INTERVAL_MS
    transaction_check_max: int = TRANSACTION_CHECK_MAX
    # SQL92 subscriptions of 4.x consumers (MessageSelector.bySql): off by default, as
    # upstream's broker has it (its refusal is what a 4.x consumer then meets); 5.x
    # receives filter by SQL either way, as upstream's pop does
    enable_property_filter: bool = False
    record_events: bool = True
    fsync: bool = True       # StoreConfig.fsync: False = flushes survive a process crash, not a power loss
    # Pulsar subscriptions: keep redelivery counts and individual acks in memory only, as
    # Pulsar does (a restart forgets them); by default they are saved at each flush
    redelivery_count_in_memory: bool = False
    # Pulsar's delayedDeliveryTickTimeMillis: a delayed message due within this many ms is
    # not held at all, and held ones are released this much early; 0 = exact on the clock
    delayed_delivery_tick_time_millis: int = 0
    # Pulsar: deduplication for topics whose namespace or topic policy does not say; the
    # backlog (bytes) past which a topic is compacted (0: never); the named listeners a
    # lookup's listener name selects ("name:pulsar://host:port,...") and the name of the
    # one the broker itself serves; the largest message (CONNECTED announces it, and the
    # store takes Pulsar messages up to it)
    broker_deduplication_enabled: bool = False
    broker_service_compaction_threshold_in_bytes: int = 0
    advertised_listeners: str = ""
    internal_listener_name: str = ""
    pulsar_max_message_size: int = 5 * 1024 * 1024
    max_lite_subscription_count: int = 100_000
    max_lite_topic_count: int = 100_000
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if self.flush_disk_type not in ("ASYNC_FLUSH", "SYNC_FLUSH"):
            raise ConfigError(f"flushDiskType must be ASYNC_FLUSH or SYNC_FLUSH, got {self.flush_disk_type!r}")
        if not 0 <= self.broker_permission <= 15:
            raise ConfigError(f"brokerPermission must be 0..15, got {self.broker_permission}")
        if self.default_topic_queue_nums < 1:
            raise ConfigError(f"defaultTopicQueueNums must be >= 1, got {self.default_topic_queue_nums}")
        if self.timer_max_delay_sec < 1:
            raise ConfigError(f"timerMaxDelaySec must be >= 1, got {self.timer_max_delay_sec}")
        if self.delayed_delivery_tick_time_millis < 0:
            raise ConfigError(f"delayedDeliveryTickTimeMillis must be >= 0, got "
                              f"{self.delayed_delivery_tick_time_millis}")
        if self.server_channel_max_idle_time_seconds < 0:
            raise ConfigError("serverChannelMaxIdleTimeSeconds must be >= 0 (0 = never), "
                              f"got {self.server_channel_max_idle_time_seconds}")
        for key, value, lo in (("transactionTimeOut", self.transaction_timeout, 0),
                               ("transactionCheckInterval", self.transaction_check_interval, 1),
                               ("transactionCheckMax", self.transaction_check_max, 0)):
            if value < lo:
                raise ConfigError(f"{key} must be >= {lo}, got {value}")
        if self.max_message_size < 1:
            raise ConfigError(f"maxMessageSize must be >= 1, got {self.max_message_size}")
        if self.pulsar_max_message_size < 1024:
            raise ConfigError(f"pulsarMaxMessageSize must be >= 1024, got {self.pulsar_max_message_size}")
        if self.broker_service_compaction_threshold_in_bytes < 0:
            raise ConfigError("brokerServiceCompactionThresholdInBytes must be >= 0, got "
                              f"{self.broker_service_compaction_threshold_in_bytes}")
        self.listeners()
        try:
            parse_delay_table(self.message_delay_level)
        except ValueError as exc:
            raise ConfigError(f"messageDelayLevel: {exc}") from None

    def listeners(self) -> dict[str, dict[str, str]]:
        """advertisedListeners as Pulsar reads it: listener name -> {scheme: URL}, a name
        given at most once per scheme (pulsar://, pulsar+ssl://); ConfigError otherwise."""
        out: dict[str, dict[str, str]] = {}
        for item in filter(None, (x.strip() for x in self.advertised_listeners.split(","))):
            name, sep, url = item.partition(":")
            scheme = url.strip().partition("://")[0]
            if not sep or not name.strip() or scheme not in ("pulsar", "pulsar+ssl", "http", "https"):
                raise ConfigError(f"advertisedListeners: {item!r} is not <listener name>:pulsar://host:port")
            urls = out.setdefault(name.strip(), {})
            if scheme in urls:
                raise ConfigError(f"advertisedListeners: listener {name.strip()!r} has two {scheme}:// URLs")
            urls[scheme] = url.strip()
        return out

    def listener_url(self, name: str, own_url: str, scheme: str = "pulsar") -> str | None:
        """The URL a Pulsar lookup that asks for listener ``name`` is answered with: the
        named advertised listener's, else — no name, or the internal listener's name
        (internalListenerName, by default the first advertised listener, else "internal")
        — this broker's own ``own_url``; None for a name the broker does not have."""
        listeners = self.listeners()
        if name and name in listeners and scheme in listeners[name]:
            return listeners[name][scheme]
        internal = self.internal_listener_name or next(iter(listeners), "internal")
        if not name or (name == internal and name not in listeners):
            return own_url
        return None

    @property
    def delay_levels(self) -> DelayLevels:
        return DelayLevels(parse_delay_table(self.message_delay_level))

    @property
    def addr(self) -> str:
        return f"{self.broker_ip}:{self.listen_port}"

    def replace(self, **changes) -> "BrokerConfig":
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_properties(cls, props: dict[str, str], base: "BrokerConfig | None" = None) -> "BrokerConfig":
        """Apply RocketMQ-named keys (strings, as in broker.conf) over ``base``."""
        cfg = dataclasses.replace(base) if base else cls()
        types = {f.name: f.type for f in dataclasses.fields(cls)}
        for key, raw in props.items():
            attr = _KEYS.get(key)
            if attr is None:
                cfg.extra[key] = raw
                continue
            setattr(cfg, attr, _coerce(key, raw, types[attr]))
        cfg.validate()
        return cfg


def _coerce(key: str, raw: str, typ: str):
    raw = raw.strip()
    if typ == "bool":
        if raw.lower() in ("true", "false"):
            return raw.lower() == "true"
        raise ConfigError(f"{key} must be true or false, got {raw!r}")
    if typ == "int":
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{key} must be an integer, got {raw!r}") from None
    if typ == "str | None":
        return raw or None
    return raw


def parse_properties(text: str) -> dict[str, str]:
    """Java-properties subset: ``key=value`` or ``key: value``, ``#``/``!`` comments."""
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        for sep in ("=", ":"):
            if sep in line:
                k, _, v = line.partition(sep)
                out[k.strip()] = v.strip()
                break
        else:
            raise ConfigError(f"line {n}: expected key=value, got {line!r}")
    return out


def load_broker_conf(path: str | Path, base: BrokerConfig | None = None) -> BrokerConfig:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read broker config {p}: {exc.strerror}") from None
    return BrokerConfig.from_properties(parse_properties(text), base)
