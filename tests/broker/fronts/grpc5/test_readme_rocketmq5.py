"""The README's 5.x examples, run as written: the `serve` one against a real
`serve --clock virtual` (only the addresses change: the README's 127.0.0.1:8081 and
127.0.0.1:9876 become the ports the test server picked), and the pytest-fixture one as
this module's own test, checked to be the README's text verbatim."""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer  # noqa: E402

from tests.support.processes import EmulatorProcess  # noqa: E402
from tests.support.readme import for_server, promised, python_blocks, reader_env  # noqa: E402


def test_the_serve_example_runs_as_written(tmp_path):
    """As printed, from a fresh clone: the venv not activated, so the block must name
    `.venv/bin/rocketmq-emulator` (issue 47: a bare `rocketmq-emulator` was not found)."""
    [block] = [b for b in python_blocks() if '"127.0.0.1:8081"' in b and '"Invoices"' in b]
    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", grpc=True).start()
    try:
        done = subprocess.run([sys.executable, "-c", for_server(block, server)], capture_output=True, text=True,
                              timeout=90, env=reader_env())
        assert done.returncode == 0, done.stderr[-3000:]
        said = promised(block)          # a `print(...)  # value` line in the README promises that value
        assert done.stdout.split("\n")[:len(said)] == said
    finally:
        server.stop()


# --- README example: begin ---
def test_an_unacked_order_comes_back(rocketmq5_endpoint, rocketmq_broker, time_travel):
    rocketmq_broker.create_topic("Orders")     # a 5.x route names only topics that exist
    config = ClientConfiguration(rocketmq5_endpoint, Credentials())
    producer = Producer(config, ("Orders",))
    producer.startup()
    consumer = SimpleConsumer(config, "billing", {"Orders": FilterExpression("*")}, await_duration=1)
    consumer.startup()
    msg = Message()
    msg.topic, msg.body = "Orders", b"order-1"
    producer.send(msg)
    [first] = consumer.receive(1, 60)          # invisible for 60 s, not acked
    time_travel("1m")
    [again] = consumer.receive(1, 60)
    assert again.delivery_attempt == 2
    consumer.ack(again)
    consumer.shutdown(); producer.shutdown()
# --- README example: end ---


def test_the_fixture_example_is_the_readmes():
    here = pathlib.Path(__file__).read_text()
    example = here.split("# --- README example: begin ---\n")[1].split("# --- README example: end ---")[0]
    assert example.strip() in [b.split("\n\n\n", 1)[-1].strip() for b in python_blocks()]
