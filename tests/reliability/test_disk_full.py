"""The broker on a full disk (issue 17, item 5): a send that cannot be written is refused
with SERVICE_NOT_AVAILABLE (never acknowledged), reads and consumption go on, the flush
timer fails quietly (one line per state change, not one per tick) instead of in a loop,
and when space returns sends and flushes work again without a restart — on a real 2 MiB
tmpfs."""
from __future__ import annotations

import logging

import pytest

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.remoting.protocol import ResponseCode
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, EmbeddedBroker, Message, MQBrokerError
from rocketmq_emulator.delay_scheduler import VirtualClock

from .tmpfs import small_tmpfs


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs at tmp_path/disk."""
    yield from small_tmpfs(tmp_path / "disk")


def _open(root) -> EmbeddedBroker:
    config = BrokerConfig.from_properties({"mapedFileSizeCommitLog": str(256 * 1024)})
    return EmbeddedBroker(BrokerCore.open(root, VirtualClock(), config))


def _lines(caplog, text: str) -> int:
    return sum(text in r.getMessage() for r in caplog.records)


def test_sends_are_refused_reads_go_on_and_everything_recovers_when_space_returns(small_disk, caplog):
    caplog.set_level(logging.INFO)
    (small_disk / "ballast").write_bytes(bytes(400 * 1024))
    emb = _open(small_disk / "store")
    emb.create_topic("T", 2)
    producer = emb.producer("pg", retry_times_when_send_failed=0)
    got = []
    emb.push_consumer("G", "T", listener=lambda msgs, ctx: (got.extend(m.body for m in msgs), CONSUME_SUCCESS)[1])
    acked = []
    refusal = None
    for i in range(100_000):
        body = b"%06d|" % i + bytes(1000)
        try:
            producer.send(Message("T", body))
        except MQBrokerError as exc:
            refusal = exc
            break
        acked.append(body)
    assert refusal is not None and len(acked) > 500
    assert refusal.code == ResponseCode.SERVICE_NOT_AVAILABLE and "No space left on device" in str(refusal)
    for _ in range(10):                                   # still full: refused again, nothing half-stored
        with pytest.raises(MQBrokerError):
            producer.send(Message("T", b"%06d|" % 999_999 + bytes(1000)))
    emb.advance("30s")                                    # 60 flush intervals on a full disk
    assert emb.run_until(lambda: len(got) >= len(acked), "1m")
    assert sorted(got) == acked                           # every acknowledged send was consumed, nothing else
    assert _lines(caplog, "cannot write the commit log") == 1
    assert _lines(caplog, "flush of the store failed") == 1
    (small_disk / "ballast").unlink()                     # space returns
    producer.send(Message("T", b"after"))
    emb.advance("2s")
    assert emb.run_until(lambda: b"after" in got, "1m")
    assert _lines(caplog, "commit-log writes succeed again") == 1
    assert _lines(caplog, "the store flushes again") == _lines(caplog, "flush of the store failed")
    emb.close()                                           # the consumer commits all it consumed
    again = _open(small_disk / "store")
    assert again.core.store.recovery.clean
    assert sorted(m.body for m in again.messages("T")) == sorted(acked + [b"after"])
    assert again.committed_offsets("G", "T") == {q: again.max_offset("T", q) for q in (0, 1)}
    again.close()


def test_a_failing_flush_is_retried_each_interval_and_logged_once(tmp_path, monkeypatch, caplog):
    """Injected: the store's flush fails for 10 s of ticks. The timer neither raises out
    of tick() nor spins: one attempt per flush interval, one line for the streak, one
    when it works again."""
    import errno

    from rocketmq_emulator.store import StoreWriteError

    emb = _open(tmp_path / "store")
    producer = emb.producer("pg")
    producer.send(Message("T", b"m"))
    store = emb.core.store
    real = store.flush
    attempts = []

    def failing():
        attempts.append(emb.core.clock.now_ms())
        raise StoreWriteError("flush of store failed: No space left on device", OSError(errno.ENOSPC, "full"))

    monkeypatch.setattr(store, "flush", failing)
    emb.advance("10s")
    assert 15 <= len(attempts) <= 21                       # every 500 ms, not at every tick or in a loop
    assert min(b - a for a, b in zip(attempts, attempts[1:])) >= 500
    assert _lines(caplog, "flush of the store failed") == 1
    monkeypatch.setattr(store, "flush", real)
    producer.send(Message("T", b"n"))
    emb.advance("1s")
    assert _lines(caplog, "the store flushes again") == 1
    producer.shutdown()
    assert emb.core.close() is None                        # the last flush worked: nothing to report
