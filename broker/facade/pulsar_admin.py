"""Pulsar's admin REST API on the core (the HTTP front's pulsar_admin.py reads requests
into these and writes Pulsar's JSON): tenants, namespaces and their policies
(pulsar_model/topics.py), topics and partitions, and the operations of
pulsar_model/admin.py (deleting topics, subscriptions without consumers, skip, reset,
compaction, the figures of the stats endpoints). Refusals: PulsarAdminError."""
from __future__ import annotations

from ..pulsar_model import admin as _admin
from ..pulsar_model.admin import EARLIEST, LATEST

__all__ = ["PulsarAdminDoor", "LATEST", "EARLIEST"]


class PulsarAdminDoor:
    # -- tenants and namespaces ---------------------------------------------------------------
    def pulsar_tenant_names(self) -> list[str]:
        return self.pulsar_topics.tenant_names()

    def pulsar_tenant_info(self, tenant: str) -> dict:
        return self.pulsar_topics.tenant_info(tenant)

    def create_pulsar_tenant(self, tenant: str, info: dict) -> None:
        self.pulsar_topics.create_tenant(tenant, info)

    def delete_pulsar_tenant(self, tenant: str) -> None:
        self.pulsar_topics.delete_tenant(tenant)

    def pulsar_namespace_names(self, tenant: str) -> list[str]:
        return self.pulsar_topics.namespace_names(tenant)

    def create_pulsar_namespace(self, tenant: str, namespace: str) -> None:
        self.pulsar_topics.create_namespace(tenant, namespace)

    def delete_pulsar_namespace(self, tenant: str, namespace: str) -> None:
        self.pulsar_topics.delete_namespace(tenant, namespace)

    def check_pulsar_namespace(self, tenant: str, namespace: str) -> None:
        """PulsarAdminError("not_found") unless the namespace exists."""
        self.pulsar_topics.check_namespace(tenant, namespace)

    def pulsar_partitioned_topics_of(self, tenant: str, namespace: str) -> list[str]:
        return self.pulsar_topics.partitioned_topics_of(tenant, namespace)

    # -- policies (``scope``: "tenant/namespace" or a topic's full name) ------------------------
    def pulsar_policy(self, scope: str, key: str):
        """The policy set at ``scope`` (None when none is)."""
        return self.pulsar_topics.policy(scope, key)

    def set_pulsar_policy(self, scope: str, key: str, value) -> None:
        """Set (``value`` None: remove) a policy at ``scope``."""
        self.pulsar_topics.set_policy(scope, key, value)

    # -- topics ----------------------------------------------------------------------------------
    def pulsar_topic_exists(self, topic) -> bool:
        return self.pulsar_topics.exists(topic)

    def create_pulsar_topic(self, topic) -> str:
        return self.pulsar_topics.create(topic)

    def create_pulsar_partitioned(self, topic, partitions: int) -> list[str]:
        return self.pulsar_topics.create_partitioned(topic, partitions)

    def add_pulsar_partitions(self, topic, partitions: int) -> list[str]:
        return self.pulsar_topics.add_partitions(topic, partitions)

    def admin_delete_pulsar_topic(self, topic, force: bool, partitioned: bool) -> None:
        _admin.delete_topic(self, topic, force, partitioned)

    def pulsar_topic_figures(self, stored: str) -> dict:
        """What the stats endpoints show of one store topic (pulsar_model/admin.topic_figures)."""
        return _admin.topic_figures(self, stored)

    def admin_compact_pulsar_topic(self, topic) -> None:
        """Compact the topic (each partition of a partitioned one) now."""
        _admin.compact(self, topic)

    # -- subscriptions, without their consumers -------------------------------------------------
    def admin_create_pulsar_subscription(self, topic, name: str, at) -> None:
        """At LATEST, EARLIEST or an offset; the topic is made if it does not exist yet."""
        _admin.create_subscription(self, topic, name, at)

    def admin_delete_pulsar_subscription(self, topic, name: str, force: bool) -> None:
        _admin.delete_subscription(self, topic, name, force)

    def admin_skip_pulsar(self, topic, name: str, n: int | None) -> None:
        """Skip ``n`` messages of the subscription's backlog (None: all of it)."""
        _admin.skip(self, topic, name, n)

    def admin_reset_pulsar_cursor(self, topic, name: str, *, time_ms: int | None = None,
                                  offset: int | None = None) -> None:
        _admin.reset_cursor(self, topic, name, time_ms=time_ms, offset=offset)
