"""One poison message's life on the dashboard, in Debian's Chromium, with the real 4.x
client (ali-ons, in node), the real 5.x client (rocketmq-python-client over gRPC) and the
real Pulsar client (pulsar-client):
from the search box to its message page, its group's ladder and the dead-letter bar's
list, re-driven there, back to its page where the re-drive and the new delivery show.
(RocketMQ 4.x with this project's SDK: test_dashboard_browser.py.) Screenshots: .test-artifacts/dashboard/."""
from __future__ import annotations

import pytest

from rocketmq_emulator.broker.cli.main import main
from tests.broker.fronts.http.browser import chromium_page, follow_to_the_dead_letter_and_back, search, shot, sources
from tests.support.processes import EmulatorProcess, wait_for

pytestmark = pytest.mark.interop


def test_an_ali_ons_poison_message_from_the_search_box_to_its_dead_letter_and_back(tmp_path):
    from tests.interop.test_ali_ons import GROUP, TOPIC, OnsDriver, failures, wait_sent_back

    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", http=True).start()
    assert main(["topic", "create", TOPIC, "--queues", "1", "--server", server.address]) == 0
    driver = OnsDriver(server.address, ok_count=0, poison_count=1, max_reconsume=2)
    base = f"http://127.0.0.1:{server.http_port}"
    try:
        driver.wait_for(lambda ev: any(e["event"] == "sent" for e in ev))
        [sent] = driver.of("sent")
        driver.wait_for(lambda ev: failures(ev, "poison-0") == [0])
        wait_sent_back(server.port, 3, 1, driver)
        with chromium_page() as page:
            page.goto(base + "/")
            search(page, sent["msgId"])
            page.wait_for_selector("#timeline >> text=sent back to delay level 3")
            for n, level in ((1, 4), (2, None)):                     # ali-ons gets it again as each comes due
                page.click("button[data-advance='next']")
                driver.wait_for(lambda ev: failures(ev, "poison-0") == list(range(n + 1)))
                if level:
                    wait_sent_back(server.port, level, 1, driver)
                    page.wait_for_selector(f"#timeline >> text=sent back to delay level {level}")
            page.wait_for_selector("#timeline >> text=dead-lettered")   # its third failure: maxReconsumeTimes 2
            walk = follow_to_the_dead_letter_and_back(
                page, base, sent["msgId"], GROUP, "ons",
                lambda: driver.wait_for(lambda ev: len(failures(ev, "poison-0")) == 4))
            ids = page.inner_text("#ids")
        driver.close()
    finally:
        driver.kill()
        server.stop()
    assert failures(driver.events, "poison-0") == [0, 1, 2, 0]    # re-driven: a fresh reconsume count
    assert "no UNIQ_KEY" in ids and "Pulsar" not in ids           # ali-ons names a message by its offset id only
    before, after = walk["before"], walk["after"]
    assert sum("delivered to" in line for line in before) == 3
    sent_back = [line for line in before if "sent back to delay level" in line]
    assert len(sent_back) == 2 and all(GROUP in line for line in sent_back)
    assert any("dead-lettered by " + GROUP in line and "%DLQ%" + GROUP in line for line in before)
    assert sources(before) == {"store", "event log"}
    assert any("re-driven from the dead letter" in line for line in after)


def test_a_5x_poison_message_from_the_search_box_to_its_dead_letter_and_back(tmp_path):
    rocketmq = pytest.importorskip("rocketmq", reason="needs the grpc extra: ./dev test installs it")
    from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer

    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", grpc=True, http=True).start()
    assert main(["topic", "create", "T5", "--queues", "1", "--server", server.address]) == 0
    assert main(["group", "create", "G5", "--retry-max-times", "2", "--server", server.address]) == 0
    config = ClientConfiguration(f"127.0.0.1:{server.grpc_port}", Credentials(), request_timeout=3)
    producer = Producer(config, ())
    producer.startup()
    consumer = SimpleConsumer(config, "G5", {"T5": FilterExpression("*")}, await_duration=2)
    consumer.startup()
    attempts = []

    def receive_one():
        got = []
        wait_for(lambda: got.extend(consumer.receive(1, 10)) or got, timeout=20, interval=0)
        attempts.append(got[0].delivery_attempt)
        return got[0]

    base = f"http://127.0.0.1:{server.http_port}"
    try:
        m = Message()
        m.topic, m.body, m.keys = "T5", b"poison 5x", "order-5x"
        receipt = producer.send(m)
        receive_one()                                   # attempt 1: never acked
        with chromium_page() as page:
            page.goto(base + "/")
            search(page, receipt.message_id)
            page.wait_for_selector("#timeline >> text=delivery attempt 1")
            for n in (2, 3):                            # its invisible time ends as the page moves the clock
                page.click("button[data-advance='1m']")
                page.wait_for_selector(f"#timeline >> text=delivered as attempt {n}")
                receive_one()
                page.wait_for_selector(f"#timeline >> text=delivery attempt {n},")
            page.goto(base + "/#/consumers/5.x")
            page.wait_for_selector("#consumers >> text=attempt 3: 1")     # invisible now, at its third attempt
            shot(page, "5x-0-consumers")
            page.goto(base + "/#/group/5.x/G5")                         # its ladder: in flight at attempt 3
            page.click("#ladder rect[data-which='waiting'][data-step='3']")
            page.wait_for_selector("#bar-title >> text=delivery attempt 3: waiting now")
            attempt_bar = page.inner_text("#bar")
            passed = page.locator("#ladder rect[data-which='passed']")
            passed_steps = sorted(passed.nth(i).get_attribute("data-step") for i in range(passed.count()))
            shot(page, "5x-0-attempt-bar")
            page.click("button[data-advance='1m']")                     # the third expiry: the DLQ
            walk = follow_to_the_dead_letter_and_back(page, base, receipt.message_id, "G5", "5x",
                                                      lambda: consumer.ack(receive_one()))
    finally:
        consumer.shutdown()
        producer.shutdown()
        server.stop()
    assert receipt.message_id in attempt_bar and "order-5x" in attempt_bar
    assert passed_steps == ["2"]                         # its retry copy of attempt 2 was received and expired
    assert attempts == [1, 2, 3, 1]                     # and after the re-drive, a fresh first attempt
    before, after = walk["before"], walk["after"]
    assert sum("received by" in line for line in before) == 3
    assert sum("invisible time ended before G5 acked it" in line for line in before) == 3
    assert any("dead-lettered by G5" in line and "%DLQ%G5" in line for line in before)
    assert sources(before) == {"store", "event log"}
    assert any("re-driven from the dead letter" in line for line in after)
    assert any("acked by G5" in line for line in after)


def test_a_pulsar_poison_message_from_the_search_box_to_its_dead_letter_and_back(tmp_path):
    pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")

    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", pulsar=True, http=True).start()
    client = pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=10)
    base = f"http://127.0.0.1:{server.http_port}"
    counts = []
    try:
        policy = pulsar.ConsumerDeadLetterPolicy(max_redeliver_count=2)     # to orders-billing-DLQ
        consumer = client.subscribe("orders", "billing", consumer_type=pulsar.ConsumerType.Shared,
                                    consumer_name="billing-1", negative_ack_redelivery_delay_ms=100,
                                    dead_letter_policy=policy)
        message_id = client.create_producer("orders").send(b"poison pulsar", partition_key="order-p")
        for _ in range(3):
            m = consumer.receive(timeout_millis=5000)
            counts.append(m.redelivery_count())
            consumer.negative_acknowledge(m)
        with pytest.raises(pulsar.Timeout):
            consumer.receive(timeout_millis=1000)       # it went to the DLQ, not back here

        def redelivered():
            again = consumer.receive(timeout_millis=10_000)
            counts.append(again.redelivery_count())
            consumer.acknowledge(again)

        with chromium_page() as page:
            page.goto(base + "/#/group/pulsar/billing")                 # its ladder: through counts 1 and 2
            page.click("#ladder rect[data-which='passed'][data-step='2']")
            page.wait_for_selector("#bar-title >> text=redelivery count 2: passed through")
            count_bar = page.locator("#bar tr").all_inner_texts()
            shot(page, "pulsar-0-count-bar")
            page.goto(base + "/#/consumers/pulsar")
            page.wait_for_selector("#consumers >> text=Shared")
            consumers = page.inner_text("#consumers")
            shot(page, "pulsar-0-subscriptions")
            walk = follow_to_the_dead_letter_and_back(page, base, str(message_id), "billing", "pulsar", redelivered)
            pulsar_id = page.inner_text("#ids")
            full = "persistent://public/default/orders"
            page.goto(base + "/#/topics")
            page.get_by_role("link", name=full, exact=True).click()      # its rates, by the name users know
            page.wait_for_selector("#topic-rates svg polyline")
            topic_rates = page.inner_text("#topic-rates") + page.inner_text("#topic-groups")
            shot(page, "pulsar-6-topic")
    finally:
        client.close()
        server.stop()
    assert len(count_bar) == 2 and "order-p" in count_bar[1] and "poison pulsar" in count_bar[1]
    assert counts == [0, 1, 2, 0]                       # a re-driven message comes back with a count of 0
    assert "persistent://public/default/orders" in consumers and "billing-1" in consumers
    before, after = walk["before"], walk["after"]
    assert sum("delivered to consumer billing-1" in line for line in before) == 3
    assert [line for line in before if "redelivery count" in line and "asked for it again" in line]
    assert any("dead-lettered by billing" in line and "orders-billing-DLQ" in line for line in before)
    assert any("re-driven from the dead letter" in line for line in after)
    assert any("acknowledged by subscription billing" in line for line in after)
    assert "Pulsar message id" in pulsar_id
    assert "produced: 2 " in topic_rates and "billing" in topic_rates     # the send, and the re-drive's store
    assert "retried: 2 " in topic_rates                                    # two negative acks, for its subscription
