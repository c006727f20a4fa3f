"""SQL92 subscriptions on both RocketMQ wires, at the core and its fronts: 4.x heartbeat
and PULL_MESSAGE (enablePropertyFilter, FILTER_DATA_NOT_EXIST, the pull's own
subscription, held pulls), CHECK_CLIENT_CONFIG, and the 5.x pop with FilterType.SQL."""
import json

import pytest

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode as RQ, ResponseCode as RC
from rocketmq_emulator.broker.operations import PopOutcome, PopRequest
from rocketmq_emulator.delay_scheduler import VirtualClock
from rocketmq_emulator.store.records import iter_records

from .wire import WireClient
from tests.support.remoting import front_of

G = "CG"
SQL = "region = 'eu' AND amount > 100"
MESSAGES = [("eu", "150"), ("us", "500"), ("eu", "50"), ("eu", None), ("eu", "101")]


def _core(enabled: bool) -> BrokerCore:
    return BrokerCore.in_memory(VirtualClock(), config=BrokerConfig(enable_property_filter=enabled))


@pytest.fixture
def on():
    core = _core(True)
    yield core
    core.close()


def _fill(client: WireClient) -> None:
    for i, (region, amount) in enumerate(MESSAGES):
        props = {"region": region} | ({"amount": amount} if amount is not None else {})
        assert client.send("T", f"m{i}".encode(), tags="TagA" if i % 2 else "TagB", props=props).code == 0


def _bodies(resp) -> list[bytes]:
    assert resp.code == RC.SUCCESS, (resp.code, resp.remark)
    return [r.body for r in iter_records(resp.body)]


def test_a_registered_sql92_subscription_pulls_only_the_matching_messages(on):
    c = WireClient(on)
    _fill(c)
    assert c.heartbeat(G, ["T"], sub=SQL, expression_type="SQL92").code == RC.SUCCESS
    resp = c.pull(G, "T")
    assert _bodies(resp) == [b"m0", b"m4"]
    assert resp.ext_fields["nextBeginOffset"] == str(len(MESSAGES))     # the skipped ones are passed too


def test_tags_are_a_property_of_the_selector(on):
    c = WireClient(on)
    _fill(c)
    assert c.heartbeat(G, ["T"], sub="TAGS = 'TagA' AND region = 'eu'", expression_type="SQL92").code == 0
    assert _bodies(c.pull(G, "T")) == [b"m3"]          # m1 and m3 carry TagA; m1 is us


def test_nothing_matching_in_the_range_is_retry_immediately_past_it(on):
    c = WireClient(on)
    _fill(c)
    assert c.heartbeat(G, ["T"], sub="region = 'nowhere'", expression_type="SQL92").code == 0
    resp = c.pull(G, "T")
    assert resp.code == RC.PULL_RETRY_IMMEDIATELY and resp.ext_fields["nextBeginOffset"] == str(len(MESSAGES))


def test_the_pulls_own_sql92_subscription(on):
    c = WireClient(on)
    _fill(c)
    assert c.heartbeat(G, ["T"]).code == 0          # registered by tag: the pull's own one wins
    assert _bodies(c.pull(G, "T", sys_flag=4, subscription=SQL, expression_type="SQL92")) == [b"m0", b"m4"]
    # a pull's own SQL92 that does not compile filters nothing, as upstream's broker does
    # (ConsumerFilterManager.build answers null, and ExpressionMessageFilter then takes
    # every message): the real client never sends one, it checks first (CHECK_CLIENT_CONFIG)
    unfiltered = c.pull(G, "T", sys_flag=4, subscription="amount >", expression_type="SQL92")
    assert unfiltered.code == RC.SUCCESS and len(_bodies(unfiltered)) == len(MESSAGES)


def test_with_enable_property_filter_off_a_sql92_pull_is_refused_as_upstream(core):
    c = WireClient(core)
    _fill(c)
    assert c.heartbeat(G, ["T"], sub=SQL, expression_type="SQL92").code == RC.SUCCESS   # taken
    resp = c.pull(G, "T")
    assert (resp.code, resp.remark) == (RC.SYSTEM_ERROR,
                                        "The broker does not support consumer to filter message by SQL92")


def test_a_heartbeat_with_sql_that_does_not_compile_leaves_no_filter_data(on):
    c = WireClient(on)
    _fill(c)
    assert c.heartbeat(G, ["T"], sub="amount > 'x'", expression_type="SQL92").code == RC.SUCCESS
    resp = c.pull(G, "T")
    assert resp.code == RC.FILTER_DATA_NOT_EXIST == 27
    assert resp.remark == "The broker's consumer filter data is not exist!Your expression may be wrong!"


def test_a_held_pull_wakes_for_a_matching_message_only(on):
    c = WireClient(on)
    assert c.send("T", b"first", props={"region": "us"}).code == 0
    assert c.heartbeat(G, ["T"], sub=SQL, expression_type="SQL92").code == 0
    assert c.pull(G, "T", 0, 1, sys_flag=2) is None                     # held
    c.send("T", b"no", props={"region": "eu", "amount": "5"})
    assert front_of(on).take_outgoing() == []                         # not for it: still held
    c.send("T", b"yes", props={"region": "eu", "amount": "500"})
    [(ch, resp)] = front_of(on).take_outgoing()
    assert ch is c.channel and _bodies(resp) == [b"yes"]


def _check_client_config(c: WireClient, sub: str, expression_type: str = "SQL92"):
    body = {"clientId": c.client_id, "group": G,
            "subscriptionData": {"topic": "T", "subString": sub, "expressionType": expression_type,
                                 "subVersion": 1, "classFilterMode": False, "tagsSet": [], "codeSet": []}}
    return c.call(RQ.CHECK_CLIENT_CONFIG, None, json.dumps(body).encode())


def test_check_client_config_answers_as_upstreams_client_manage_processor(core, on):
    off, enabled = WireClient(core), WireClient(on)
    assert _check_client_config(off, "TagA", "TAG").code == RC.SUCCESS
    resp = _check_client_config(off, SQL)
    assert (resp.code, resp.remark) == (RC.SYSTEM_ERROR,
                                        "The broker does not support consumer to filter message by SQL92")
    assert _check_client_config(enabled, SQL).code == RC.SUCCESS
    bad = _check_client_config(enabled, "amount > 'x'")
    assert bad.code == RC.SUBSCRIPTION_PARSE_FAILED
    assert bad.remark == "Invalid MessageSelector. 'x' cannot be compared by <, >, <=, >= or BETWEEN"
    assert enabled.call(RQ.CHECK_CLIENT_CONFIG, None, b"").code == RC.SUCCESS


def _pop_bodies(core, **kw) -> list[bytes]:
    result = core.pop(PopRequest(G, "T", 32, 60_000, **kw))
    assert result.outcome is PopOutcome.FOUND, result
    return sorted(p.record.body for p in result.messages)


@pytest.mark.parametrize("enabled", [False, True])
def test_a_5x_pop_filters_by_sql_whatever_enable_property_filter_says(enabled):
    core = _core(enabled)                # (upstream's pop does not look at it)
    try:
        _fill(WireClient(core))
        assert _pop_bodies(core, sql=SQL) == [b"m0", b"m4"]
        assert core.pop(PopRequest(G, "T", 32, 60_000, sql=SQL)).outcome is PopOutcome.NO_NEW_MESSAGE
    finally:
        core.close()


def test_a_5x_pop_with_sql_that_does_not_compile_is_refused_first(on):
    result = on.pop(PopRequest(G, "NoSuchTopic", 32, 60_000, sql="amount >"))
    assert result.outcome is PopOutcome.ILLEGAL_FILTER_EXPRESSION
    assert result.remark.startswith("Invalid MessageSelector. ")


def test_a_fifo_pop_filters_by_sql_too(on):
    _fill(WireClient(on))
    assert _pop_bodies(on, sql="amount IS NULL", fifo=True) == [b"m3"]
