"""Pulsar names onto the store's (issue 21, item 2): every form a client sends, a mapping
that is one to one and reversible, and bad names refused in one line."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from rocketmq_emulator.broker.pulsar_model.names import (
    PulsarNameError,
    parse_topic,
    pulsar_topic,
    store_group,
    store_topic,
    subscription_of,
)
from rocketmq_emulator.broker.rocketmq_model.topics import validate_topic_name
from rocketmq_emulator.broker.rocketmq_model.groups import validate_group_name
from rocketmq_emulator.store.accounting import is_business_topic


@pytest.mark.parametrize("name", ["my-topic", "public/default/my-topic", "persistent://public/default/my-topic"])
def test_the_short_forms_mean_public_default(name):
    assert store_topic(name) == "pulsar|public|default|my-topic"
    assert parse_topic(name).full == "persistent://public/default/my-topic"


def test_characters_outside_the_stores_set_are_escaped_and_come_back():
    stored = store_topic("persistent://my.tenant/ns:1/orders.v2=eu")
    assert stored == "pulsar|my%2Etenant|ns%3A1|orders%2Ev2%3Deu"
    validate_topic_name(stored)
    assert pulsar_topic(stored).full == "persistent://my.tenant/ns:1/orders.v2=eu"


def test_partitions_retry_and_dead_letter_topics_are_topics_of_their_own():
    t = parse_topic("persistent://public/default/orders-partition-3")
    assert t.partition == 3 and t.partitioned_base.local == "orders"
    assert store_topic("orders-sub-RETRY") == "pulsar|public|default|orders-sub-RETRY"
    assert parse_topic("orders").partition == -1


def test_a_pulsar_topic_never_becomes_a_rocketmq_system_or_retry_topic():
    for name in ("rmq_sys_wheel_timer", "%RETRY%g", "%DLQ%g", "TBW102", "SCHEDULE_TOPIC_XXXX"):
        stored = store_topic(f"public/default/{name}")
        assert stored.startswith("pulsar|") and is_business_topic(stored)
    assert pulsar_topic("orders") is None and pulsar_topic("%RETRY%g") is None


@given(st.text(min_size=1, max_size=20).filter(lambda s: "/" not in s))
def test_the_mapping_is_reversible_for_any_local_name(local):
    name = f"persistent://public/default/{local}"
    try:
        stored = store_topic(name)
    except PulsarNameError as exc:
        assert "too long" in str(exc)
        return
    validate_topic_name(stored)
    assert pulsar_topic(stored).full == name


def test_subscriptions_are_groups():
    assert store_group("sub1") == "sub1" and store_group("my.sub") == "my%2Esub"
    validate_group_name(store_group("a b/c"))
    assert subscription_of(store_group("a b/c")) == "a b/c"


@pytest.mark.parametrize("name, says", [
    ("", "blank"), ("http://x/y/z", "domain must be"), ("a/b", "not <tenant>/<namespace>/<name>"),
    ("a/b/c/d", "legacy form"), ("persistent://a//c", "empty part"),
    ("non-persistent://public/default/x", "non-persistent topics are not supported"),
    ("x" * 130, "too long")])
def test_bad_names_are_one_readable_line(name, says):
    with pytest.raises(PulsarNameError, match=says) as info:
        store_topic(name)
    assert "\n" not in str(info.value)
