"""One request builder per request, used by every transport (issue 48, item 3): a push
consumer's pull is built once as the core's typed PullRequest; the wire carries that
request as the real codec encodes it, so the two cannot drift apart."""
from __future__ import annotations

from dataclasses import replace

from rocketmq_emulator.broker.fronts.remoting.protocol import RemotingCommand, RequestCode
from rocketmq_emulator.broker.fronts.remoting.protocol.typed import pull_request_of
from rocketmq_emulator.client_sdk import EmbeddedBroker
from rocketmq_emulator.client_sdk.message import MessageQueue
from rocketmq_emulator.client_sdk.process_queue import ProcessQueue
from rocketmq_emulator.client_sdk.push_consumer import _PullRequest
from rocketmq_emulator.client_sdk.subscription import SubscriptionData


def _pull_of(consumer, sub: SubscriptionData, next_offset: int = 5):
    return _PullRequest(MessageQueue(sub.topic, "broker-a", 1), ProcessQueue(), next_offset)


def test_the_typed_pull_and_the_wire_pull_say_the_same():
    """At 574545d the typed pull hard-coded expression type "TAG" while the command
    carried the subscription's own: the two builders had drifted."""
    broker = EmbeddedBroker()
    broker.create_topic("T", 2)
    consumer = broker.push_consumer("cg", "T", listener=lambda msgs, ctx: "CONSUME_SUCCESS")
    sub = replace(SubscriptionData.build("T", "TagA || TagB", 7), expression_type="SQL92")
    pr = _pull_of(consumer, sub)
    typed = consumer.pull_request(pr, sub)
    header = consumer.pull_header(pr, sub)
    assert typed.expression_type == header["expressionType"] == "SQL92"
    wired = pull_request_of(RemotingCommand.request(RequestCode.PULL_MESSAGE, header), allow_suspend=True)
    # what the broker reads of the command is the typed request (it reads no expression
    # type without a subscription in the pull: "TAG")
    assert wired == replace(typed, expression_type="TAG")
    broker.close()
