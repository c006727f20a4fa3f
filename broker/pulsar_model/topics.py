"""Pulsar's admin view of the store's topics (issue 41): tenants, namespaces and their
policies, partitioned and non-partitioned topics made and deleted as Pulsar's REST API
makes them, and the topic lists a regex subscription reads. No wire format: the HTTP
front's pulsar_admin.py turns requests into these calls and PulsarAdminError into
Pulsar's status codes; the Pulsar front reads partition counts and topic lists here.

Theory of operation. Topics are the store's (pulsar_names.py maps the names): a
non-partitioned topic is one store topic, a partitioned one the store topics
``<name>-partition-<i>`` for i in 0..N-1, so its partition count is read off the topic
table, as before. What the store has no place for is kept in one JSON document,
config/pulsarAdmin.json, written whole at each change (admin changes are rare, and each
is answered only once written): the tenants and namespaces made through the API, the
policies set on them and on topics (deduplication, retention, compaction threshold),
and, per deleted topic, its *floor*: the offset its queue had reached when it was
deleted. The store keeps a deleted topic's records (the log is the truth); a topic made
again under that name starts at its floor, so nothing from before the deletion comes
back, and message ids keep growing, as a new ledger's would.

Namespaces exist when made through the API, when a topic lives in them (Pulsar clients
here may use any namespace, as its auto-creation would with the namespace in place), or
for ``public/default``; a namespace is made under a tenant that exists in the same sense,
as Pulsar requires.
"""
from __future__ import annotations

import re
from typing import Callable

from ..config import PERM_READ, PERM_WRITE
from ..dialects import is_pulsar_store_topic
from ..notifications import PulsarTopicsChanged
from .names import PulsarNameError, PulsarTopic, parse_topic, pulsar_topic, store_topic
from ..rocketmq_model.topics import QUEUE_NUMS_MAX

__all__ = ["PulsarTopics", "PulsarAdminError", "TOPIC_IN_USE", "partitioned_delete_refusal", "ADMIN_CONFIG", "DEFAULT_NAMESPACE", "POLICIES", "MAX_PARTITIONS",
           "check_partition_count"]

ADMIN_CONFIG = "pulsarAdmin"                    # config/pulsarAdmin.json
DEFAULT_NAMESPACE = "public/default"
# The policies kept, by Pulsar's REST name, with the JSON type each takes (bool, int, or a
# dict for retention). Only deduplication and the compaction threshold change behaviour;
# retention is kept and answered (nothing is ever removed from the store here).
POLICIES = {"deduplicationEnabled": bool, "compactionThreshold": int, "retention_policies": dict}
_NAME = re.compile(r"^[-=:.\w]+$")              # Pulsar's NamedEntity rule for tenants and namespaces
# Pulsar's maxNumPartitionsPerPartitionedTopic (0, no bound, upstream): here the queues a topic
# may have, the bound the CLI and the remoting front hold topics to. Every partition is a
# store topic made at once, so a count without a bound is a loop without one.
MAX_PARTITIONS = QUEUE_NUMS_MAX


class PulsarAdminError(Exception):
    """A refused admin request: ``kind`` is Pulsar's HTTP outcome (``conflict`` 409,
    ``not_found`` 404, ``precondition`` 412, ``not_acceptable`` 406, ``bad_request`` 400),
    the message Pulsar's reason."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class PulsarTopics:
    def __init__(self, store, topics, notify, broker_defaults: Callable[[], dict]) -> None:
        """``topics``: the core's TopicManager; ``notify``: its Notifier (PulsarTopicsChanged);
        ``broker_defaults()``: the broker-wide policy values (broker.conf)."""
        self.store = store
        self.topics = topics
        self.notify = notify
        self.broker_defaults = broker_defaults
        doc = store.load_config(ADMIN_CONFIG) or {}
        self.tenants: dict[str, dict] = dict(doc.get("tenants") or {})
        self.namespaces: dict[str, dict] = {k: dict(v) for k, v in (doc.get("namespaces") or {}).items()}
        self.topic_policies: dict[str, dict] = {k: dict(v) for k, v in (doc.get("topics") or {}).items()}
        # store topic -> the first offset a topic made again under a deleted one's name has
        self.floors: dict[str, int] = {k: int(v) for k, v in (doc.get("floors") or {}).items()}
        self.policy_changed: list[Callable[[], None]] = []     # told after a policy changes
        # every change of the topic table (a client's auto-creation, the CLI, this API) that
        # makes or deletes a Pulsar topic is told (topic-list watchers, deleted topics' clients)
        recorded = topics.on_change

        def changed(table, name: str) -> None:
            if recorded is not None:
                recorded(table, name)
            if is_pulsar_store_topic(name):
                notify(PulsarTopicsChanged((name,), deleted=name not in table.table))
        topics.on_change = changed

    # -- topics ----------------------------------------------------------------------------------
    def partitions(self, topic: str | PulsarTopic) -> int:
        """How many partitions a topic has (its ``-partition-<i>`` store topics); 0 for a
        topic that is not partitioned or does not exist (a real broker answers 0 too)."""
        prefix = store_topic(topic) + "-partition-"
        found = [name[len(prefix):] for name in self.topics.table if name.startswith(prefix)]
        indexes = [int(x) for x in found if x.isdigit()]
        return max(indexes) + 1 if indexes else 0

    def exists(self, topic: PulsarTopic) -> bool:
        """A non-partitioned topic (or one partition) that exists."""
        return self.topics.get(store_topic(topic)) is not None

    def create(self, topic: PulsarTopic) -> str:
        """A non-partitioned topic (PUT /admin/v2/persistent/t/ns/x); its store topic."""
        stored = self._persistent(topic)
        if self.topics.get(stored) is not None or self.partitions(topic):
            raise PulsarAdminError("conflict", "This topic already exists")
        base = topic.partitioned_base
        if base is not topic and self.topics.get(store_topic(base)) is not None:
            raise PulsarAdminError("conflict", f"{base.full} is a non-partitioned topic: it has no partitions")
        self.make(stored)
        return stored

    def create_partitioned(self, topic: PulsarTopic, partitions: int) -> list[str]:
        """PUT .../partitions with N: N store topics, made in order."""
        stored = self._persistent(topic)
        check_partition_count(partitions)
        if topic.partition >= 0:
            raise PulsarAdminError("precondition", f"{topic.full} is the name of a partition: a partitioned topic's "
                                                   f"name may not end with -partition-<i>")
        if self.topics.get(stored) is not None or self.partitions(topic):
            raise PulsarAdminError("conflict", "This topic already exists")
        names = [f"{stored}-partition-{i}" for i in range(partitions)]
        for name in names:
            self.make(name)
        return names

    def add_partitions(self, topic: PulsarTopic, partitions: int) -> list[str]:
        """POST .../partitions with N: the partitions a partitioned topic lacks up to N,
        made in order; its store topics."""
        stored = self._persistent(topic)
        check_partition_count(partitions)
        have = self.partitions(topic)
        if not have:
            raise PulsarAdminError("not_found", "Partitioned topic does not exist")
        if partitions <= have:
            raise PulsarAdminError("precondition", "Number of partitions can only be increased")
        names = [f"{stored}-partition-{i}" for i in range(have, partitions)]
        for name in names:
            self.make(name)
        return names

    def make(self, stored: str):
        """The store topic of a Pulsar topic, one queue, made if missing (what a client's
        producer or consumer does, as allowAutoTopicCreation); its TopicConfig."""
        return self.topics.create_system(stored, 1, PERM_READ | PERM_WRITE)

    def deletable(self, topic: PulsarTopic) -> list[str]:
        """The store topics ``delete`` would delete: the partitions of a partitioned topic,
        else the topic itself (PulsarAdminError not_found when there is none)."""
        stored = self._persistent(topic)
        n = self.partitions(topic)
        if n:
            return [f"{stored}-partition-{i}" for i in range(n)]
        if self.topics.get(stored) is None:
            raise PulsarAdminError("not_found", "Topic not found")
        return [stored]

    def delete(self, names: list[str]) -> None:
        """Forget store topics (the caller checked nothing holds them, or closed what did):
        their configs go, their floors are set, their topic policies and the watchers'
        lists follow. The records stay in the log."""
        for stored in names:
            self.floors[stored] = self.store.max_offset(stored, 0)
            self.topics.delete(stored)
            t = pulsar_topic(stored)
            if t is not None:
                self.topic_policies.pop(t.full, None)
        self._save()

    def first_offset(self, stored: str) -> int:
        """The first offset of ``stored`` that belongs to the topic as it is now."""
        return max(self.store.min_offset(stored, 0), self.floors.get(stored, 0))

    def topics_of(self, tenant: str, namespace: str) -> list[str]:
        """The namespace's topics, full names, partitions listed one by one (Pulsar's
        GET /admin/v2/persistent/t/ns and GET_TOPICS_OF_NAMESPACE), sorted."""
        found = (pulsar_topic(stored) for stored in self.topics.table)
        return sorted(t.full for t in found if t is not None and (t.tenant, t.namespace) == (tenant, namespace))

    def partitioned_topics_of(self, tenant: str, namespace: str) -> list[str]:
        """The namespace's partitioned topics, by their own names."""
        out = set()
        for name in self.topics_of(tenant, namespace):
            t = parse_topic(name)
            if t.partition >= 0:
                out.add(t.partitioned_base.full)
        return sorted(out)

    @staticmethod
    def _persistent(topic: PulsarTopic) -> str:
        try:
            return store_topic(topic)
        except PulsarNameError as exc:
            raise PulsarAdminError("precondition", str(exc)) from None

    # -- tenants and namespaces ----------------------------------------------------------------------
    def tenant_names(self) -> list[str]:
        return sorted(set(self.tenants) | {ns.partition("/")[0] for ns in self.namespace_names()})

    def namespace_names(self, tenant: str | None = None) -> list[str]:
        found = set(self.namespaces) | {DEFAULT_NAMESPACE}
        for stored in self.topics.table:
            t = pulsar_topic(stored)
            if t is not None:
                found.add(f"{t.tenant}/{t.namespace}")
        return sorted(ns for ns in found if tenant is None or ns.partition("/")[0] == tenant)

    def create_tenant(self, tenant: str, info: dict) -> None:
        _check_name(tenant, "tenant")
        if tenant in self.tenants or tenant == "public":
            raise PulsarAdminError("conflict", "Tenant already exists")
        self.tenants[tenant] = {"adminRoles": list(info.get("adminRoles") or []),
                                "allowedClusters": list(info.get("allowedClusters") or ["standalone"])}
        self._save()

    def tenant_info(self, tenant: str) -> dict:
        if tenant not in self.tenant_names():
            raise PulsarAdminError("not_found", "Tenant does not exist")
        return self.tenants.get(tenant) or {"adminRoles": [], "allowedClusters": ["standalone"]}

    def delete_tenant(self, tenant: str) -> None:
        if tenant not in self.tenant_names():
            raise PulsarAdminError("not_found", "The tenant does not exist")
        if self.namespace_names(tenant):
            raise PulsarAdminError("conflict", "The tenant still has active namespaces")
        self.tenants.pop(tenant, None)
        self._save()

    def create_namespace(self, tenant: str, namespace: str) -> None:
        _check_name(namespace, "namespace")
        name = f"{tenant}/{namespace}"
        if tenant not in self.tenant_names():
            raise PulsarAdminError("not_found", "Tenant does not exist")
        if name in self.namespaces or name == DEFAULT_NAMESPACE:
            raise PulsarAdminError("conflict", "Namespace already exists")
        self.namespaces[name] = {}
        self._save()

    def delete_namespace(self, tenant: str, namespace: str) -> None:
        name = f"{tenant}/{namespace}"
        if name not in self.namespace_names():
            raise PulsarAdminError("not_found", "Namespace does not exist")
        if self.topics_of(tenant, namespace):
            raise PulsarAdminError("conflict", "Cannot delete non empty namespace")
        self.namespaces.pop(name, None)
        self._save()

    def check_namespace(self, tenant: str, namespace: str) -> None:
        """PulsarAdminError not_found for a namespace that does not exist (policies are set
        on existing namespaces only)."""
        if f"{tenant}/{namespace}" not in self.namespace_names():
            raise PulsarAdminError("not_found", "Namespace does not exist")

    # -- policies ---------------------------------------------------------------------------------
    def policy(self, scope: str, key: str):
        """A namespace's (``scope`` "t/ns") or a topic's (its full name) policy value; None
        when not set."""
        table = self.topic_policies if "://" in scope else self.namespaces
        return (table.get(scope) or {}).get(key)

    def set_policy(self, scope: str, key: str, value) -> None:
        """Set (value not None) or remove a policy of a namespace or a topic."""
        table = self.topic_policies if "://" in scope else self.namespaces
        entry = table.setdefault(scope, {})
        if value is None:
            entry.pop(key, None)
        else:
            entry[key] = value
        self._save()
        for fn in self.policy_changed:
            fn()

    def effective(self, stored: str, key: str):
        """The policy that applies to a store topic: the topic's (a partition's comes from
        its partitioned topic), else its namespace's, else the broker's."""
        t = pulsar_topic(stored)
        if t is not None:
            for scope in (t.full, t.partitioned_base.full, f"{t.tenant}/{t.namespace}"):
                value = self.policy(scope, key)
                if value is not None:
                    return value
        return self.broker_defaults().get(key)

    def _save(self) -> None:
        self.store.save_config(ADMIN_CONFIG, {"tenants": self.tenants, "namespaces": self.namespaces,
                                              "topics": self.topic_policies, "floors": self.floors})


# Pulsar's words when a topic in use is deleted without force (persistent and non-persistent)
TOPIC_IN_USE = "Topic has active producers/subscriptions"


def partitioned_delete_refusal(topic: PulsarTopic) -> str:
    """The refusal of DELETE .../{topic} on a partitioned topic's name."""
    return f"{topic.full} is a partitioned topic: delete it with DELETE .../partitions"


def check_partition_count(n: int) -> None:
    """Pulsar's refusals of a partition count, before anything is made."""
    if n <= 0:
        raise PulsarAdminError("not_acceptable", "Number of partitions should be more than 0")
    if n > MAX_PARTITIONS:
        raise PulsarAdminError("not_acceptable", f"Number of partitions should be less than or equal to "
                                                 f"{MAX_PARTITIONS}")


def _check_name(name: str, what: str) -> None:
    if not name or not _NAME.match(name):
        raise PulsarAdminError("precondition", f"Invalid {what} name {name!r}")
