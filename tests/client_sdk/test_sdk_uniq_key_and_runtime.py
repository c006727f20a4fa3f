"""UNIQ_KEY ids (checklist 48, upstream MessageClientIDSetterTest) and the client
runtime's loop: timers, deadline-by-deadline advance, nested runs, error surfacing."""
import os
import sys
import threading

import pytest

from rocketmq_emulator.client_sdk.runtime import ClientRuntime, to_millis
from rocketmq_emulator.client_sdk.uniq_key import UniqKeyGenerator, decode_uniq_key, month_start_ms
from rocketmq_emulator.delay_scheduler import SystemClock, VirtualClock

JAN_1_2024 = 1_704_067_200_000


def test_uniq_key_is_32_uppercase_hex_with_an_incrementing_counter():  # checklist 48
    gen = UniqKeyGenerator("127.0.0.1", os.getpid())
    a, b = gen.next_id(JAN_1_2024 + 5), gen.next_id(JAN_1_2024 + 5)
    assert len(a) == 32 and a == a.upper() and all(c in "0123456789ABCDEF" for c in a)
    assert int(b[-4:], 16) == int(a[-4:], 16) + 1


def test_uniq_key_decodes_to_ip_pid_and_time_in_month():
    now = JAN_1_2024 + 17 * 86_400_000 + 1234
    uid = UniqKeyGenerator("10.1.2.3", os.getpid()).next_id(now)
    parts = decode_uniq_key(uid, now)
    assert parts["ip"] == "10.1.2.3"
    assert parts["pid"] == os.getpid() & 0xFFFF
    assert parts["time_ms"] == now


def test_uniq_key_counter_wraps_at_16_bits_and_month_rolls_over():
    gen = UniqKeyGenerator(counter=0xFFFF)
    assert gen.next_id(JAN_1_2024)[-4:] == "FFFF"
    assert gen.next_id(JAN_1_2024)[-4:] == "0000"
    feb = month_start_ms(JAN_1_2024)[1]
    assert decode_uniq_key(gen.next_id(feb + 7))["ms_in_month"] == 7


def test_threads_sharing_a_generator_never_get_the_same_id():
    # A producer may be called from several threads at once (its loop runs in another
    # one). With threads switching every microsecond, a counter read and written back
    # with a call in between hands out about 20,000 duplicates here. The ids all share
    # one millisecond, so only the counter tells them apart.
    gen = UniqKeyGenerator()
    per_thread = 15_000                              # 4 threads: 60,000 < 2**16 values
    results: list[list[str]] = []

    def take():
        results.append([gen.next_id(JAN_1_2024) for _ in range(per_thread)])

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=take) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(interval)
    ids = [i for r in results for i in r]
    assert len(ids) == 4 * per_thread
    assert len(set(ids)) == len(ids)


def test_ipv6_uniq_key_is_56_hex_chars():
    assert len(UniqKeyGenerator("::1", 1).next_id(JAN_1_2024)) == 56


def test_durations():
    assert to_millis("10s") == 10_000 and to_millis("2h") == 7_200_000 and to_millis("1h30m") == 5_400_000
    assert to_millis(250) == 250
    with pytest.raises(ValueError):
        to_millis("ten seconds")


def test_advance_stops_at_every_timer_in_order():
    rt = ClientRuntime(VirtualClock(0))
    seen = []
    rt.call_later(3000, lambda: seen.append(("a", rt.now_ms())))
    rt.call_later(1000, lambda: seen.append(("b", rt.now_ms())))
    t = rt.call_every(2000, lambda: seen.append(("tick", rt.now_ms())))
    rt.advance("5s")
    assert seen == [("b", 1000), ("tick", 2000), ("a", 3000), ("tick", 4000)]
    assert rt.now_ms() == 5000
    t.cancel()
    rt.advance("10s")
    assert len(seen) == 4


def test_run_until_idle_does_not_move_time_and_runs_chains():
    rt = ClientRuntime(VirtualClock(0))
    out = []
    rt.call_soon(lambda: rt.call_soon(lambda: out.append(rt.now_ms())))
    rt.call_later(1, out.append, "later")
    rt.run_until_idle()
    assert out == [0] and rt.now_ms() == 0


def test_a_failing_task_is_raised_after_the_run_finishes():
    rt = ClientRuntime(VirtualClock(0))
    done = []
    rt.call_soon(lambda: 1 / 0)
    rt.call_soon(done.append, "still ran")
    with pytest.raises(ZeroDivisionError):
        rt.run_until_idle()
    assert done == ["still ran"]


def test_nested_advance_from_a_task():
    rt = ClientRuntime(VirtualClock(0))
    seen = []
    rt.call_later(500, lambda: seen.append(("inner timer", rt.now_ms())))
    rt.call_soon(lambda: (rt.advance("1s"), seen.append(("task done", rt.now_ms()))))
    rt.run_until_idle()
    assert seen == [("inner timer", 500), ("task done", 1000)]


def test_run_until_predicate_on_virtual_time():
    rt = ClientRuntime(VirtualClock(0))
    flag = []
    rt.call_later(7000, flag.append, 1)
    assert rt.run_until(lambda: flag, timeout="1m") is True
    assert rt.now_ms() == 7000
    assert rt.run_until(lambda: False, timeout="2s") is False and rt.now_ms() == 9000


def _run_in_thread(fn, wait_s: float = 10.0):
    """fn() in a daemon thread; (finished, its result). A run that never returns fails
    the test instead of hanging it."""
    out = {}
    t = threading.Thread(target=lambda: out.update(value=fn()), daemon=True)
    t.start()
    t.join(wait_s)
    return not t.is_alive(), out.get("value")


def _endless_work(rt):
    """A task that always queues another, as a stream of pull responses arriving from
    the network does; returns (how many ran, a switch that ends the stream)."""
    ran, stopped = [0], []

    def task():
        ran[0] += 1
        if not stopped:
            rt.call_soon(task)
    rt.call_soon(task)
    return ran, lambda: stopped.append(True)


def test_real_clock_run_until_sees_its_predicate_while_work_keeps_coming():
    rt = ClientRuntime(SystemClock())
    ran, stop = _endless_work(rt)
    try:
        finished, value = _run_in_thread(lambda: rt.run_until(lambda: ran[0] >= 100, "5s"))
    finally:
        stop()
    assert finished, "run_until never returned while tasks kept arriving"
    assert value is True and ran[0] >= 100


def test_real_clock_run_until_keeps_its_timeout_while_work_keeps_coming():
    rt = ClientRuntime(SystemClock())
    ran, stop = _endless_work(rt)
    try:
        finished, value = _run_in_thread(lambda: rt.run_until(lambda: False, "200ms"))
    finally:
        stop()
    assert finished, "run_until overran its timeout while tasks kept arriving"
    assert value is False and ran[0] > 0
