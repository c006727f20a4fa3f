"""A hypothesis state machine over the whole client + broker: sends, listeners that fail
a few times, the broker's write permission flipping, a second consumer joining, and
time jumps (a rule like any other). After every step: the committed offset never passes
a message that is neither consumed nor handed to the broker's retry machinery
(checklist 71, 74); at the end, with writes on, every message was consumed: nothing lost."""
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, RECONSUME_LATER, EmbeddedBroker, Message

TOPIC, GROUP = "Orders", "billing"
RETRY_COPIES = ("SCHEDULE_TOPIC_XXXX", "%RETRY%" + GROUP, "%DLQ%" + GROUP)


class ClientBrokerMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.broker = EmbeddedBroker(pid=7)
        self.broker.create_topic(TOPIC, 2)
        self.failures: dict[str, int] = {}      # body -> deliveries still to fail
        self.consumed: set[str] = set()          # bodies consumed successfully
        self.sent: list[str] = []
        self.consumers = [self._consumer()]
        self.producer = None

    def _consumer(self):
        return self.broker.push_consumer(GROUP, TOPIC, listener=self.listener)

    def listener(self, msgs, context):
        body = msgs[0].text
        if self.failures.get(body, 0) > 0:
            self.failures[body] -= 1
            return RECONSUME_LATER
        self.consumed.add(body)
        return CONSUME_SUCCESS

    @rule(n=st.integers(1, 4), fail=st.integers(0, 2))
    def send(self, n, fail):
        if not self.broker.core.writeable:
            return
        if self.producer is None:
            self.producer = self.broker.producer()
        for _ in range(n):
            body = f"m{len(self.sent)}"
            self.failures[body] = fail
            self.sent.append(body)
            self.producer.send(Message(TOPIC, body))

    @rule(writeable=st.booleans())
    def permission(self, writeable):
        self.broker.set_writeable(writeable)

    @precondition(lambda self: len(self.consumers) == 1)
    @rule()
    def second_consumer_joins(self):
        self.consumers.append(self._consumer())

    @rule(step=st.sampled_from(["100ms", "1s", "5s", "10s", "30s", "2m"]))
    def advance(self, step):
        self.broker.advance(step)

    @invariant()
    def the_broker_core_is_consistent(self):
        self.broker.core._check()

    @invariant()
    def committed_offset_never_passes_an_unsettled_message(self):
        copies = set()
        for topic in RETRY_COPIES:
            copies |= {m.msg_id for m in self.broker.messages(topic)}
        for qid, committed in self.broker.committed_offsets(GROUP, TOPIC).items():
            for m in self.broker.messages(TOPIC, qid)[:committed]:
                assert m.text in self.consumed or m.msg_id in copies, \
                    f"offset {committed} of queue {qid} passed {m.text}, neither consumed nor sent back"

    def teardown(self):
        try:
            self.broker.set_writeable(True)
            self.broker.advance("30m")
            assert set(self.sent) <= self.consumed, f"lost: {sorted(set(self.sent) - self.consumed)}"
            assert not self.broker.dlq_messages(GROUP)
        finally:
            self.broker.close()


TestClientBrokerMachine = ClientBrokerMachine.TestCase
TestClientBrokerMachine.settings = settings(max_examples=50, stateful_step_count=20, deadline=None,
                                            suppress_health_check=[HealthCheck.too_slow])
