"""Lite topics and priority messages on the 5.x front, in process on a virtual clock
(issue 51): bad input answered with upstream's codes, a lite topic's expiry telling its
subscribers, a backlog popped highest priority first."""
from __future__ import annotations

import pytest

pytest.importorskip("rocketmq", reason="needs the grpc extra: ./dev test installs it")

from rocketmq_emulator.broker.config import BrokerConfig  # noqa: E402
from rocketmq_emulator.broker.core import BrokerCore  # noqa: E402
from rocketmq_emulator.broker.fronts.grpc5.convert import pb  # noqa: E402
from rocketmq_emulator.broker.fronts.grpc5.front import Rocketmq5Front  # noqa: E402
from rocketmq_emulator.broker.fronts.grpc5.stubs import spb  # noqa: E402
from rocketmq_emulator.delay_scheduler import VirtualClock  # noqa: E402


def _front(**config):
    core = BrokerCore.in_memory(clock=VirtualClock(), config=BrokerConfig(**config))
    core.create_topic("Chats", 4, message_type="LITE")
    core.create_topic("Jobs", 10, message_type="PRIORITY")
    return core, Rocketmq5Front(core)


def _msg(topic, body=b"x", *, lite=None, priority=None, n=[0]):
    n[0] += 1
    sp = pb.SystemProperties(message_id=f"id-{n[0]}")
    if lite is not None:
        sp.lite_topic = lite
    if priority is not None:
        sp.priority = priority
    return pb.Message(topic=pb.Resource(name=topic), body=body, system_properties=sp)


def _sync(front, client, names, action=0, group="G"):
    return front.sync_lite_subscription(client, spb.SyncLiteSubscriptionRequest(
        action=action, topic=pb.Resource(name="Chats"), group=pb.Resource(name=group), lite_topic_set=names))


@pytest.mark.parametrize("name", ["a b", "x" * 65, "caf\u00e9", " "])
def test_an_illegal_lite_topic_is_refused_on_send_and_on_subscribe(name):
    core, front = _front()
    st, _ = front.send([_msg("Chats", lite=name)])
    assert st.code == pb.ILLEGAL_LITE_TOPIC and "\n" not in st.message
    assert _sync(front, "c1", [name]).code == pb.ILLEGAL_LITE_TOPIC
    assert core.lite_counts() == (0, 0)


def test_the_lite_topic_quota_is_answered_and_keeps_what_was_stored():
    core, front = _front(max_lite_topic_count=2)
    assert front.send([_msg("Chats", lite="a")])[0].code == pb.OK
    assert front.send([_msg("Chats", lite="b")])[0].code == pb.OK
    st, _ = front.send([_msg("Chats", lite="c")])
    assert st.code == pb.LITE_TOPIC_QUOTA_EXCEEDED and "quota" in st.message
    assert front.send([_msg("Chats", lite="a")])[0].code == pb.OK      # an existing one still takes messages
    assert [n for n, _ in core.lite_topics_of("Chats")] == ["a", "b"]


def test_a_normal_message_to_a_lite_topic_and_a_lite_one_to_a_normal_topic_are_refused():
    core, front = _front()
    core.create_topic("Plain", 4, message_type="NORMAL")
    assert front.send([_msg("Chats")])[0].code == pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    assert front.send([_msg("Plain", lite="a")])[0].code == pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE


def test_the_subscription_quota_is_answered_with_its_code():
    _, front = _front(max_lite_subscription_count=2)
    assert _sync(front, "c1", ["a", "b"]).code == pb.OK
    st = _sync(front, "c2", ["c"])
    assert st.code == pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED and "quota" in st.message
    assert _sync(front, "c1", ["a"], action=1).code == pb.OK             # a removal frees one
    assert _sync(front, "c2", ["c"]).code == pb.OK


def test_a_receive_pops_only_the_clients_lite_topics_and_an_idle_one_expires_with_a_notice():
    core, front = _front()
    core.topics.get("Chats").attributes["lite.topic.expiration"] = "30"
    told = []
    front.outgoing = lambda client, command: told.append((client, command))
    front.telemetry_settings("c1", pb.Settings(client_type=pb.LITE_PUSH_CONSUMER, subscription=pb.Subscription(
        group=pb.Resource(name="G"))))
    assert _sync(front, "c1", ["mine"]).code == pb.OK
    front.send([_msg("Chats", b"m", lite="mine")])
    front.send([_msg("Chats", b"o", lite="other")])
    req = spb.ReceiveMessageRequest(group=pb.Resource(name="G"), message_queue=pb.MessageQueue(
        topic=pb.Resource(name="Chats")), batch_size=32)
    req.invisible_duration.seconds = 30
    st, msgs = front.receive(req, "c1")
    assert st.code == pb.OK and [(m.body, m.system_properties.lite_topic, m.topic.name) for m in msgs] == \
        [(b"m", "mine", "Chats")]
    assert msgs[0].system_properties.message_type == pb.LITE
    ack_top, _ = front.ack("G", "Chats", [spb.AckMessageEntry(message_id=msgs[0].system_properties.message_id,
                                                              receipt_handle=msgs[0].system_properties.receipt_handle,
                                                              lite_topic="mine")])
    assert ack_top.code == pb.OK
    core.advance_clock(31 * 60_000)
    assert [(c, cmd.notify_unsubscribe_lite_command.lite_topic) for c, cmd in told] == [("c1", "mine")]
    assert core.lite_topics_of("Chats") == [] and core.lite_subscriptions_of("G") == {"c1": ("Chats", [])}


def test_priority_out_of_range_and_with_a_lite_topic_are_refused():
    _, front = _front()
    st, _ = front.send([_msg("Jobs", priority=10)])
    assert st.code == pb.BAD_REQUEST and "0..9" in st.message
    st, _ = front.send([_msg("Jobs", priority=-1)])
    assert st.code == pb.BAD_REQUEST
    st, _ = front.send([_msg("Chats", lite="a", priority=3)])
    assert st.code == pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE


def test_a_backlog_is_received_highest_priority_first_with_its_priority():
    core, front = _front()
    for p in (0, 5, 9, 1, 9, 3):
        assert front.send([_msg("Jobs", str(p).encode(), priority=p)])[0].code == pb.OK
    req = spb.ReceiveMessageRequest(group=pb.Resource(name="GP"), message_queue=pb.MessageQueue(
        topic=pb.Resource(name="Jobs")), batch_size=32)
    req.invisible_duration.seconds = 30
    st, msgs = front.receive(req, "c1")
    assert [m.system_properties.priority for m in msgs] == [9, 9, 5, 3, 1, 0]
    assert {m.system_properties.message_type for m in msgs} == {pb.PRIORITY}


def test_lite_topics_and_subscriptions_are_counted_on_the_dashboard_and_metrics_and_not_listed_as_topics():
    from prometheus_client import generate_latest
    from prometheus_client.core import CollectorRegistry

    from rocketmq_emulator.broker.fronts.http.dashboard import DashboardViews
    from rocketmq_emulator.broker.fronts.http.metrics import BrokerCollector

    core, front = _front()
    front.telemetry_settings("c1", pb.Settings(client_type=pb.LITE_PUSH_CONSUMER, subscription=pb.Subscription(
        group=pb.Resource(name="G"))))
    assert _sync(front, "c1", ["s1", "s2"]).code == pb.OK
    for lite in ("s1", "s2", "s3"):
        assert front.send([_msg("Chats", lite=lite)])[0].code == pb.OK
    assert core.lite_census() == ({"Chats": 3}, {"G": 2})
    views = DashboardViews(lambda: [core])
    state = views.state()
    assert state["lite"] == {"topics": [{"broker": core.config.broker_name, "topic": "Chats", "lite_topics": 3}],
                             "groups": [{"broker": core.config.broker_name, "group": "G", "lite_subscriptions": 2}]}
    assert not [t for t in state["topics"] if t["topic"].startswith("%LMQ%")]         # counted, not listed
    assert not [t for t in views.topics("", 0, 100)["rows"] if t["topic"].startswith("%LMQ%")]
    assert views.group("G", "5.x")["lite_subscriptions"] == [
        {"broker": core.config.broker_name, "client_id": "c1", "topic": "Chats", "lite_topics": ["s1", "s2"]}]
    registry = CollectorRegistry()
    registry.register(BrokerCollector(lambda: [core]))
    text = generate_latest(registry).decode()
    b = core.config.broker_name
    assert f'rocketmq_emulator_lite_topics{{broker="{b}",topic="Chats"}} 3.0' in text
    assert f'rocketmq_emulator_lite_subscriptions{{broker="{b}",group="G"}} 2.0' in text


def test_a_priority_messages_page_says_its_priority():
    from rocketmq_emulator.broker.views.message_life import life

    core, front = _front()
    st, entries = front.send([_msg("Jobs", b"urgent", priority=8)])
    assert st.code == pb.OK
    page = life([core], entries[0].message_id)
    assert (page["priority"], page["lite_topic"]) == (8, None)
    st, entries = front.send([_msg("Chats", b"hi", lite="s1")])
    page = life([core], entries[0].message_id)
    assert (page["priority"], page["lite_topic"]) == (None, "s1")


def test_in_an_exclusive_group_a_lite_topic_added_by_another_client_is_taken_from_the_first_with_a_notice():
    core, front = _front()
    from rocketmq_emulator.broker.rocketmq_model.groups import SubscriptionGroupConfig

    # the group config's attributes as upstream's admin sends them ("+key": set)
    assert core.update_group(SubscriptionGroupConfig.from_json(
        {"groupName": "G", "attributes": {"+lite.sub.model": "Exclusive"}})) is None
    told = []
    front.outgoing = lambda client, command: told.append((client, command.notify_unsubscribe_lite_command.lite_topic))
    for client in ("c1", "c2", "c3"):
        front.telemetry_settings(client, pb.Settings(client_type=pb.LITE_PUSH_CONSUMER, subscription=pb.Subscription(
            group=pb.Resource(name="G"))))
    assert _sync(front, "c1", ["a", "b"]).code == pb.OK
    assert _sync(front, "c3", ["a"], group="Other").code == pb.OK      # another group keeps its own
    assert _sync(front, "c2", ["a"]).code == pb.OK                     # a partial add takes it
    assert told == [("c1", "a")]
    assert core.lite_subscriptions_of("G") == {"c1": ("Chats", ["b"]), "c2": ("Chats", ["a"])}
    assert core.lite_subscriptions_of("Other") == {"c3": ("Chats", ["a"])}
    assert _sync(front, "c2", ["a", "b"], action=2).code == pb.OK      # upstream: a complete sync takes nothing
    assert told == [("c1", "a")] and core.lite_subscriptions_of("G")["c1"] == ("Chats", ["b"])


def test_in_a_shared_group_a_lite_topic_is_kept_by_every_client_that_adds_it():
    core, front = _front()
    told = []
    front.outgoing = lambda client, command: told.append(client)
    for client in ("c1", "c2"):
        front.telemetry_settings(client, pb.Settings(client_type=pb.LITE_PUSH_CONSUMER, subscription=pb.Subscription(
            group=pb.Resource(name="G"))))
        assert _sync(front, client, ["a"]).code == pb.OK
    assert told == [] and core.lite_subscriptions_of("G") == {"c1": ("Chats", ["a"]), "c2": ("Chats", ["a"])}
