"""Every metric name the README mentions is one `/metrics` exports, with the labels it
says (issue 47: the README said `faults_applied_total`; the name is
`rocketmq_emulator_faults_applied_total`). Checked against a live `serve` after a little
traffic (a message produced, consumed, retried and dead-lettered; a fault fired), so the labelled families have
samples to read their labels from."""
from __future__ import annotations

import re
import subprocess
import sys
import urllib.request

import pytest

from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, RECONSUME_LATER, Message, Producer, PushConsumer, RemoteBroker

from tests.support.processes import EmulatorProcess
from tests.support.readme import README

pytest.importorskip("prometheus_client", reason="needs the http extra: ./dev test installs it")

PREFIX = "rocketmq_emulator_"
# `name` or `name{label,label}`, as the README writes a metric
MENTION = re.compile(r"^([a-z][a-z0-9_]*)(?:\{([a-z_,]*)\})?$")


def mentions() -> list[tuple[str, tuple[str, ...] | None]]:
    found = []
    for span in re.findall(r"`([^`\n]+)`", README.read_text()):
        m = MENTION.match(span)
        if m:
            found.append((m.group(1), tuple(sorted(m.group(2).split(","))) if m.group(2) else None))
    return found


def live_metrics(http_port: int) -> dict[str, set[tuple[str, ...]]]:
    """{family name: the label-name sets of its samples}, every `# TYPE` family listed."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=10).read().decode()
    families = {line.split()[2]: set() for line in text.splitlines() if line.startswith("# TYPE ")}
    for name, labels in re.findall(r"^([a-z_]+)(?:\{(.*?)\})? ", text, re.M):
        if name in families:
            families[name].add(tuple(sorted(re.findall(r'([a-z_]+)="', labels or ""))))
    return families


def cli(server: EmulatorProcess, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", *args, "--server", server.address],
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def metrics(tmp_path_factory):
    server = EmulatorProcess(tmp_path_factory.mktemp("metrics") / "store", "--clock", "virtual", http=True).start()
    try:
        assert cli(server, "topic", "create", "Metered", "--queues", "1").returncode == 0
        remote = RemoteBroker(server.address)
        producer = Producer("metered-app", remote).start()
        producer.send(Message("Metered", b"one"))
        consumed, failed = [], []
        consumers = [PushConsumer("metered", remote, listener=lambda msgs, ctx: (consumed.extend(msgs),
                                                                               CONSUME_SUCCESS)[1]),
                     PushConsumer("metered-retry", remote, listener=lambda msgs, ctx: (failed.extend(msgs),
                                                                                     RECONSUME_LATER)[1]),
                     PushConsumer("metered-dead", remote, max_reconsume_times=0,
                                  listener=lambda msgs, ctx: (failed.extend(msgs), RECONSUME_LATER)[1])]
        for consumer in consumers:
            consumer.subscribe("Metered", "*").start()
        remote.run_until(lambda: consumed and len(failed) == 2, "10s")   # one retried, one dead-lettered
        for consumer in consumers:
            consumer.shutdown()
        producer.shutdown(); remote.close()
        assert cli(server, "fault", "add", "send", "refuse", "--topic", "Metered", "--times", "1").returncode == 0
        assert cli(server, "message", "send", "Metered", "refused").returncode != 0       # the fault fires
        yield live_metrics(server.http_port)
    finally:
        server.stop()


def test_the_readme_mentions_metrics():
    names = {name for name, _ in mentions() if name.startswith(PREFIX)}
    assert {PREFIX + "faults_applied_total", PREFIX + "produced_per_second", PREFIX + "up"} <= names, names


def test_every_metric_the_readme_names_is_exported_with_its_labels(metrics):
    wrong = []
    for name, labels in mentions():
        if name == PREFIX:                  # the prefix itself, said once
            continue
        if not name.startswith(PREFIX):
            if PREFIX + name in metrics:
                wrong.append(f"`{name}` is exported as `{PREFIX}{name}`")
            continue
        if name not in metrics:
            wrong.append(f"`{name}` is not exported (exported: {sorted(metrics)})")
        elif labels is not None and metrics[name] != {labels}:
            wrong.append(f"`{name}` has the labels {sorted(metrics[name])}, the README says {labels}")
    assert not wrong, "\n".join(wrong)
