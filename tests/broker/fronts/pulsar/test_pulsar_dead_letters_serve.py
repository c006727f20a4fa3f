"""A Pulsar subscription's dead letters from the command line against `serve`, with the
real pulsar-client over TCP (issue 47, items 6 and 7): `group show` and `dlq list` count
them alike; a user reads the topic by its Pulsar name (persistent://...) in the tables,
in --json and on the dashboard; a re-driven dead letter reaches the Pulsar consumer with
what a Pulsar broker would send it — the user's properties, ORIGIN_MESSAGE_ID as a
ledger:entry message id — and none of the store's own properties. Waits are bounded."""
from __future__ import annotations

import json
import re
import urllib.request

import pytest

from rocketmq_emulator.broker.pulsar_model.names import parse_message_id
from tests.support.cli_run import run_cli
from tests.support.processes import EmulatorProcess, wait_for

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
pytestmark = pytest.mark.interop

TOPIC = "persistent://public/default/payments"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`ledger` reads payments with a dead-letter policy of one redelivery: the poison
    message is nacked twice and the client sends it to payments-ledger-DLQ."""
    proc = EmulatorProcess(tmp_path_factory.mktemp("pulsar-dlq") / "store", "--clock", "virtual", pulsar=True,
                           http=True).start()
    client = pulsar.Client(f"pulsar://127.0.0.1:{proc.pulsar_port}", operation_timeout_seconds=10)
    consumer = client.subscribe(TOPIC, "ledger", consumer_type=pulsar.ConsumerType.Shared,
                                negative_ack_redelivery_delay_ms=100,
                                dead_letter_policy=pulsar.ConsumerDeadLetterPolicy(max_redeliver_count=1))
    original = client.create_producer(TOPIC).send(b"poison", properties={"order": "17"})
    for _ in range(2):
        consumer.negative_acknowledge(consumer.receive(timeout_millis=5000))
    wait_for(lambda: json.loads(cli(proc, "dlq", "list", "ledger", "--json")), timeout=10)
    proc.client, proc.consumer, proc.original = client, consumer, original
    yield proc
    client.close()
    proc.stop()


def cli(server, *args) -> str:
    done = run_cli(*args, "--server", server.address)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_group_show_counts_the_dead_letters_dlq_list_lists(server):
    shown = cli(server, "group", "show", "ledger")
    assert "dead letters: 1;" in shown and "pulsar|" not in shown
    assert len(json.loads(cli(server, "dlq", "list", "ledger", "--json"))) == 1


def test_dlq_list_shows_the_pulsar_topic_by_its_pulsar_name_in_its_column(server):
    [dead] = json.loads(cli(server, "dlq", "list", "ledger", "--json"))
    assert dead["original_topic"] == TOPIC
    header, row = cli(server, "dlq", "list", "ledger").splitlines()
    assert "pulsar|" not in row
    at = header.index("TOPIC")
    assert row[at:].split()[0] == TOPIC                      # under its heading
    end = header.index("ATTEMPTS") + len("ATTEMPTS")
    assert row[:end].endswith(" 2") and row[end] == " "      # and the columns after it still straight


def test_the_dashboard_names_the_pulsar_topic_of_a_dead_letter(server):
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/api/state", timeout=10) as r:
        state = json.loads(r.read())
    [dead] = [d for d in state["dead_letters"] if d["group"] == "ledger"]
    assert dead["topic"] == TOPIC


def test_a_redriven_dead_letter_reaches_the_pulsar_consumer_as_a_pulsar_broker_sends_it(server):
    assert re.search(r"1 sent, 0 re-driven before", cli(server, "dlq", "redrive", "ledger", "--all"))
    again = server.consumer.receive(timeout_millis=5000)
    assert (again.data(), again.redelivery_count()) == (b"poison", 0)
    props = again.properties()
    origin = parse_message_id(props.pop("ORIGIN_MESSAGE_ID"))
    assert origin == (server.original.ledger_id(), server.original.entry_id())   # the original, as Pulsar names it
    assert set(props) == {"order", "REDRIVEN_FROM"} and props["order"] == "17"
    server.consumer.acknowledge(again)


def test_metrics_count_the_dead_letters_dlq_list_lists(server):
    """/metrics' group_dead_letters_total is the same count as group show and dlq list
    (it read only %DLQ%<group>, so a Pulsar subscription's dead letters were 0 there)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{server.http_port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    counted = re.findall(r'^rocketmq_emulator_group_dead_letters_total\{broker="broker-a",group="ledger"\} (\S+)$',
                         text, re.M)
    assert counted == ["1.0"], [line for line in text.splitlines() if "dead_letters" in line]
