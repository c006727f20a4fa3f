"""The core's typed pull (broker/operations.py): addressed without any 4.x header, each
outcome named by the core; the 4.x front maps them to codes (tests/broker/test_pull.py
holds the wire replies as they were)."""
import pytest

from rocketmq_emulator.broker.operations import PullOutcome as O, PullRequest
from rocketmq_emulator.broker.fronts.remoting.protocol.typed import PULL_CODES as _CODES
from rocketmq_emulator.store.records import decode_record

from .wire import WireClient

G = "CG"


@pytest.fixture
def client(core):
    c = WireClient(core)
    c.send("T", b"first", tags="a")         # creates the topic (4 queues by default) and a message
    c.send("T", b"second", tags="b")
    assert c.heartbeat(G, ["T"], sub="a").code == 0
    return c


def test_found_with_the_groups_registered_subscription_and_the_commit(core, client):
    result = core.pull(PullRequest(G, "T", 0, 0, 32, commit_offset=1), client.channel)
    assert result.outcome is O.FOUND and not result.outcome.refused
    assert [decode_record(r).body for r in result.records] == [b"first"]     # the group's filter: tag a
    assert (result.next_offset, result.min_offset, result.max_offset) == (2, 0, 2)
    assert core.store.query_offset(G, "T", 0) == 1                          # committed with the pull


def test_a_subscription_sent_with_the_pull_overrides_the_registered_one(core, client):
    result = core.pull(PullRequest(G, "T", 0, 0, 32, subscription="b"), client.channel)
    assert [decode_record(r).body for r in result.records] == [b"second"]
    assert core.store.query_offset(G, "T", 0) == -1                         # nothing to commit


@pytest.mark.parametrize("request_, outcome", [
    (PullRequest(G, "T", 0, 2, 32), O.NO_NEW_MESSAGE),
    (PullRequest(G, "T", 0, 7, 32), O.OFFSET_MOVED),
    (PullRequest(G, "T", 0, 0, 32, subscription="zzz"), O.RETRY_IMMEDIATELY),
    (PullRequest(G, "Nope", 0, 0, 32), O.TOPIC_NOT_EXIST),
    (PullRequest(G, "T", 99, 0, 32), O.QUEUE_ILLEGAL),
    (PullRequest(G, "T", 0, 0, 32, subscription=" || "), O.SUBSCRIPTION_PARSE_FAILED),
    (PullRequest("OtherGroup", "T", 0, 0, 32), O.SUBSCRIPTION_NOT_EXIST),
    (PullRequest(G, "T", 0, 0, 32, sub_version=99), O.SUBSCRIPTION_NOT_LATEST),
    (PullRequest(G, "T", 0, 0, 32, subscription="a", expression_type="SQL92"), O.FILTER_UNSUPPORTED),
])
def test_each_outcome(core, client, request_, outcome):
    result = core.pull(request_, client.channel)
    assert result.outcome is outcome
    assert result.records == () or outcome is O.FOUND
    if outcome.refused:
        assert result.remark


def test_a_broker_that_is_not_readable_refuses_first(core, client):
    core.set_broker_permission(2)
    assert core.pull(PullRequest("Nobody", "Nope", 0, 0, 32), client.channel).outcome is O.BROKER_NOT_READABLE


def test_every_outcome_has_a_4x_code():
    assert set(_CODES) == set(O)
