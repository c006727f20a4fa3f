"""The wall clock in ms, for calls that take it from their caller (store.snapshot)."""
import time


def wall_ms() -> int:
    return time.time_ns() // 1_000_000
