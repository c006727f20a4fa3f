"""The retry lifecycle's decisions, table-driven, one table per dialect. Each row cites
what it implements: rocketmq-4x.md (the 4.x checklist), seed 002 (RocketMQ 5.x
consumption retry), seeds 000/001/003 (Pulsar retry-letter and dead-letter topics).
The 4.x rows are also what the wire tests of CONSUMER_SEND_MSG_BACK see; the 5.x and
Pulsar fronts are later issues, so their rows test the decision alone."""
import pytest

from rocketmq_emulator.broker.retry_lifecycle import (DEFAULT_MAX_RECONSUME_TIMES, ROCKETMQ5_UNORDERED_INTERVALS_MS,
                                                      exhausted, pulsar_dead_letter, pulsar_delivered_dead,
                                                      pulsar_reconsume_later, pulsar_redelivery,
                                                      rocketmq4_client_fallback, rocketmq4_retry_send,
                                                      rocketmq4_send_back, rocketmq5_after_failure)

S, M, H = 1000, 60_000, 3_600_000


# -- RocketMQ 4.x: asyncConsumerSendMsgBack / handleRetryAndDLQ ---------------------------------
@pytest.mark.parametrize("reconsume, max_times, asked, dead, level, why", [
    (0, 16, 0, False, 3, "no level asked: 3 + reconsumeTimes (10 s first)"),
    (5, 16, 0, False, 8, "3 + 5"),
    (15, 16, 0, False, 18, "the last retry waits level 18 (2 h)"),
    (16, 16, 0, True, 0, "reconsumeTimes >= maxReconsumeTimes: %DLQ%"),
    (2, 2, 0, True, 0, "a client's maxReconsumeTimes (version >= 121)"),
    (0, 16, 5, False, 5, "the client's delayLevel wins"),
    (0, 16, -1, True, 0, "a negative delayLevel asks for the DLQ at once"),
])
def test_rocketmq4_send_back(reconsume, max_times, asked, dead, level, why):
    d = rocketmq4_send_back("g", {"TAGS": "a", "UNIQ_KEY": "U1"}, "Orders", "OFFSETID", reconsume, max_times, asked, 3)
    assert (d.dead_letter, d.delay_level, d.attempt) == (dead, level, reconsume + 1), why
    assert (d.topic, d.queue_id) == (("%DLQ%g", 0) if dead else ("%RETRY%g", 3))
    assert d.delay_ms == 0
    # the copy keeps the properties and gains these, in this order (the stored string's)
    assert list(d.properties.items()) == [("TAGS", "a"), ("UNIQ_KEY", "U1"), ("RETRY_TOPIC", "Orders"),
                                          ("WAIT", "false"), ("DELAY", str(level)), ("ORIGIN_MESSAGE_ID", "OFFSETID")]


def test_rocketmq4_later_copies_keep_their_first_retry_topic_and_origin():
    first = rocketmq4_send_back("g", {}, "Orders", "ID-0", 0, 16, 0, 0)
    again = rocketmq4_send_back("g", first.properties, "%RETRY%g", "ID-1", 1, 16, 0, 0)
    assert again.properties["RETRY_TOPIC"] == "Orders" and again.properties["ORIGIN_MESSAGE_ID"] == "ID-0"
    assert again.delay_level == 4


@pytest.mark.parametrize("reconsume, max_times, dead", [(0, 16, False), (15, 16, False), (16, 16, True), (3, 3, True)])
def test_rocketmq4_a_send_to_the_retry_topic(reconsume, max_times, dead):
    props = {"DELAY": "4", "RETRY_TOPIC": "Orders"}
    d = rocketmq4_retry_send("g", props, reconsume, max_times, 2)
    assert d.dead_letter is dead
    # stored as sent, or in queue 0 of the DLQ with DELAY 0 (the sender's map untouched)
    assert (d.topic, d.queue_id, d.properties["DELAY"]) == (("%DLQ%g", 0, "0") if dead else ("%RETRY%g", 2, "4"))
    assert props["DELAY"] == "4" and d.attempt == reconsume


def test_rocketmq4_a_clients_fallback_copy():
    """sendMessageBackAsNormalMessage: what the copy carries, concurrently and orderly."""
    d = rocketmq4_client_fallback("g", {"TAGS": "a", "TRAN_MSG": "true"}, "Orders", "MSGID", 2, 16)
    assert (d.topic, d.attempt, d.delay_level, d.dead_letter) == ("%RETRY%g", 3, 5, False)
    assert d.properties == {"TAGS": "a", "ORIGIN_MESSAGE_ID": "MSGID", "RETRY_TOPIC": "Orders",
                            "RECONSUME_TIME": "3", "MAX_RECONSUME_TIMES": "16", "DELAY": "5"}
    orderly = rocketmq4_client_fallback("g", {"ORIGIN_MESSAGE_ID": "FIRST"}, "Orders", "MSGID", 2, 5, 2)
    assert orderly.properties["RECONSUME_TIME"] == "2" and orderly.properties["ORIGIN_MESSAGE_ID"] == "FIRST"


# -- RocketMQ 5.x: seed 002 --------------------------------------------------------------------
def test_rocketmq5_unordered_intervals_are_seed_002s_table():
    # seed 002, "Retry interval": 1 10 s, 2 30 s, 3 1 min, 4 2 min ... 15 1 h, 16 2 h
    assert ROCKETMQ5_UNORDERED_INTERVALS_MS == (10 * S, 30 * S, 1 * M, 2 * M, 3 * M, 4 * M, 5 * M, 6 * M, 7 * M,
                                                8 * M, 9 * M, 10 * M, 20 * M, 30 * M, 1 * H, 2 * H)


@pytest.mark.parametrize("attempt, max_retries, fifo, dead, delay, why", [
    (1, 16, False, False, 10 * S, "retry 1: 10 seconds"),
    (2, 16, False, False, 30 * S, "retry 2: 30 seconds"),
    (16, 16, False, False, 2 * H, "retry 16: 2 hours"),
    (17, 16, False, True, 0, "delivered 1 + 16 times: DLQ"),
    (17, 20, False, False, 2 * H, "'If the number of retries exceeds 16, ... 2 hours'"),
    (3, 3, False, False, 1 * M, "three retries: delivered four times ..."),
    (4, 3, False, True, 0, "... 'one original attempt and three retries'"),
    (1, 16, True, False, 3000, "FIFO: a fixed interval"),
    (17, 16, True, True, 0, "FIFO: the same maximum"),
])
def test_rocketmq5_after_a_failed_attempt(attempt, max_retries, fifo, dead, delay, why):
    d = rocketmq5_after_failure("g", "Orders", attempt, max_retries, fifo=fifo)
    assert (d.dead_letter, d.delay_ms) == (dead, delay), why
    # a retry copy goes to the pop retry topic with reconsume times = attempt; a dead letter to
    # the DLQ with attempt + 1 (the proxy's pop-time check counts one more)
    assert d.topic == ("%DLQ%g" if dead else "%RETRY%g+Orders")
    assert d.attempt == (attempt + 1 if dead else attempt) and d.delay_level == 0 and d.queue_id == 0


def test_rocketmq5_the_copys_properties_and_a_forward_to_the_dlq():
    props = {"TAGS": "a", "DELAY": "3"}
    d = rocketmq5_after_failure("g", "Orders", 1, 16, properties=props, offset_msg_id="OFF")
    assert d.properties == {"TAGS": "a", "RETRY_TOPIC": "Orders", "ORIGIN_MESSAGE_ID": "OFF", "WAIT": "false"}
    again = rocketmq5_after_failure("g", "Orders", 2, 16, properties=d.properties, offset_msg_id="OFF2")
    assert again.properties["ORIGIN_MESSAGE_ID"] == "OFF"           # the first copy's original, kept
    forwarded = rocketmq5_after_failure("g", "Orders", 1, 16, force_dead_letter=True)
    assert (forwarded.dead_letter, forwarded.topic, forwarded.attempt) == (True, "%DLQ%g", 2)


# -- Pulsar: seeds 000, 001, 003 ----------------------------------------------------------------
def test_pulsar_reconsume_later_goes_to_the_retry_letter_topic_with_seed_000s_properties():
    t = "persistent://my-property/my-ns/test"
    d = pulsar_reconsume_later(t, "my-subscription", {"k": "v"}, "314:28:-1", 5000, 16)
    assert not d.dead_letter and d.topic == t + "-my-subscription-RETRY" and d.delay_ms == 5000
    # seed 000: REAL_TOPIC, ORIGIN_MESSAGE_ID, RETRY_TOPIC, RECONSUMETIMES
    assert d.properties == {"k": "v", "REAL_TOPIC": t, "ORIGIN_MESSAGE_ID": "314:28:-1",
                            "RETRY_TOPIC": t + "-my-subscription-RETRY", "RECONSUMETIMES": "1", "DELAY_TIME": "5000"}
    again = pulsar_reconsume_later(d.topic, "my-subscription", d.properties, "400:1:-1", 5000, 16)
    assert again.properties["REAL_TOPIC"] == t and again.properties["ORIGIN_MESSAGE_ID"] == "314:28:-1"
    assert again.properties["RECONSUMETIMES"] == "2" and again.attempt == 2


@pytest.mark.parametrize("times_before, max_count, dead", [
    (15, 16, False),     # the 16th reconsume still retries
    (16, 16, True),      # seed 000: "After the retry reaches the upper limit ... the dead letter topic"
    (0, 0, True),
])
def test_pulsar_reconsume_later_dead_letters_past_max_redeliver_count(times_before, max_count, dead):
    d = pulsar_reconsume_later("T", "sub", {"RECONSUMETIMES": str(times_before)}, "1:2:-1", 1000, max_count)
    assert d.dead_letter is dead
    assert d.topic == ("T-sub-DLQ" if dead else "T-sub-RETRY")
    assert ("DELAY_TIME" in d.properties) is not dead


def test_pulsar_custom_retry_and_dead_letter_topics():
    # seed 000: deadLetterPolicy(...retryLetterTopic("...sub1-retry").deadLetterTopic("...sub1-dlq"))
    retry, dlq = "persistent://my-property/my-ns/sub1-retry", "persistent://my-property/my-ns/sub1-dlq"
    assert pulsar_reconsume_later("T", "sub1", {}, "1:1:-1", 0, 3, retry_letter_topic=retry).topic == retry
    assert pulsar_reconsume_later("T", "sub1", {"RECONSUMETIMES": "3"}, "1:1:-1", 0, 3,
                                  dead_letter_topic=dlq).topic == dlq


@pytest.mark.parametrize("count, max_count, dead, topic", [
    (0, 3, False, "T"),                 # redelivered in place, count 1
    (2, 3, False, "T"),
    (3, 3, True, "T-sub-DLQ"),          # seed 001: generated "with topic name and subscription name and suffix with -DLQ"
    (50, None, False, "T"),             # no dead-letter policy: redelivered for ever
])
def test_pulsar_negative_ack_and_ack_timeout(count, max_count, dead, topic):
    d = pulsar_redelivery("T", "sub", count, max_count)
    assert (d.dead_letter, d.topic) == (dead, topic)
    # in place: the count + 1; the dead-letter copy counts the last failure too
    assert d.attempt == count + 1
    assert d == pulsar_dead_letter("T", "sub", count) if dead else not d.dead_letter


@pytest.mark.parametrize("count, max_count, dead", [(3, 3, False), (4, 3, True), (0, 0, False), (1, 0, True),
                                                    (99, None, False)])
def test_pulsar_a_message_delivered_past_the_policy(count, max_count, dead):
    """A message that arrives redelivered more often than the policy allows goes to the
    dead-letter topic without reaching the application."""
    assert pulsar_delivered_dead(count, max_count) is dead


@pytest.mark.parametrize("max_retries", [0, 1, 3, 16])
def test_every_dialect_delivers_a_message_at_most_one_plus_max_times(max_retries):
    """One rule for all three: deliveries until the decision is a dead letter."""
    def deliveries(dead_after_delivery):
        n = 1
        while not dead_after_delivery(n):
            n += 1
        return n

    rocketmq4 = deliveries(lambda n: rocketmq4_send_back("g", {}, "T", "ID", n - 1, max_retries, 0, 0).dead_letter)
    rocketmq5 = deliveries(lambda n: rocketmq5_after_failure("g", "T", n, max_retries).dead_letter)
    redelivery = deliveries(lambda n: pulsar_redelivery("T", "s", n - 1, max_retries).dead_letter)
    letters = deliveries(lambda n: pulsar_reconsume_later("T", "s", {"RECONSUMETIMES": str(n - 1)}, "1:1:-1", 0,
                                                          max_retries).dead_letter)
    assert rocketmq4 == rocketmq5 == redelivery == letters == 1 + max_retries
    assert exhausted(1 + max_retries, max_retries) and not exhausted(max_retries, max_retries)
    assert DEFAULT_MAX_RECONSUME_TIMES == 16


def test_a_send_back_records_one_sent_back_event_with_the_due_time_of_its_delay(core):
    """The copy's level goes to the schedule as the decision's int, and the one due
    time computed there is the one both events report."""
    from rocketmq_emulator.broker.events import EventKind

    from .wire import WireClient

    client = WireClient(core)
    stored = client.send("T", b"x", keys="k")
    assert client.heartbeat("G", ["T"]).code == 0
    phys = int(stored.ext_fields["msgId"][-16:], 16)
    assert client.send_back(phys, "G", 0).code == 0
    assert client.send_back(phys, "G", 7).code == 0                     # a level the client chose
    delayed = core.events.of_kind(EventKind.DELAYED)
    sent = core.events.of_kind(EventKind.SENT_BACK)
    assert [e.delay_level for e in sent] == [3, 7] == [e.delay_level for e in delayed]
    assert [e.due_ms for e in sent] == [e.due_ms for e in delayed] == [
        core.clock.now_ms() + 10_000, core.clock.now_ms() + 3 * 60_000]
    assert [(e.topic, e.queue_id) for e in sent] == [("%RETRY%G", 0)] * 2
    assert all(type(e.delay_level) is int for e in sent)


# -- RocketMQ transactions: the producer-side check-back ladder --------------------------------------
@pytest.mark.parametrize("times_before, dead, attempt, why", [
    (None, False, 1, "the first check: no TRANSACTION_CHECK_TIMES yet"),
    ("1", False, 2, "each check counts one more"),
    ("14", False, 15, "the 15th check (transactionCheckMax)"),
    ("15", True, 15, "checked transactionCheckMax times: discarded (needDiscard)"),
    ("99", True, 99, "past the maximum (a lowered transactionCheckMax): discarded"),
])
def test_transaction_check_counts_checks_then_discards(times_before, dead, attempt, why):
    from rocketmq_emulator.broker.retry_lifecycle import transaction_check

    props = {"REAL_TOPIC": "Orders", "UNIQ_KEY": "U1"}
    if times_before is not None:
        props["TRANSACTION_CHECK_TIMES"] = times_before
    d = transaction_check(props, 7, check_max=15, interval_ms=60 * S)
    assert (d.dead_letter, d.attempt) == (dead, attempt), why
    if dead:
        assert d.topic == "TRANS_CHECK_MAX_TIME_TOPIC" and d.properties == props
    else:
        assert d.topic == "RMQ_SYS_TRANS_HALF_TOPIC" and d.delay_ms == 60 * S
        assert d.properties == {**props, "TRANSACTION_CHECK_TIMES": str(attempt), "TRAN_PREPARED_QUEUE_OFFSET": "7"}


@pytest.mark.parametrize("immunity, first_ms", [(None, 6 * S), ("30", 30 * S), ("-1", 6 * S), ("x", 6 * S),
                                                ("0", 0)])
def test_the_first_check_comes_transaction_timeout_or_the_producers_own_time_after_the_half(immunity, first_ms):
    from rocketmq_emulator.broker.retry_lifecycle import TRANSACTION_TIMEOUT_MS, transaction_first_check_ms

    props = {} if immunity is None else {"CHECK_IMMUNITY_TIME_IN_SECONDS": immunity}
    assert TRANSACTION_TIMEOUT_MS == 6 * S and transaction_first_check_ms(props) == first_ms
