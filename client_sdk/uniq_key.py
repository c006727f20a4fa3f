"""UNIQ_KEY message ids, as ``MessageClientIDSetter`` makes them (checklist 48).

An id is uppercase hex of: client IP (4 bytes, or 16 for IPv6) + pid (int16) +
a class-loader hash (int32) + milliseconds since the start of the current month
(int32) + a counter (int16, incrementing, wrapping at 16 bits). 32 hex chars for IPv4.

Time comes from the caller (the runtime's clock), so ids made on a VirtualClock are
reproducible. Java computes the month start in the JVM's time zone; we use UTC so a
run does not depend on where it runs.
"""
from __future__ import annotations

import ipaddress
import itertools
import struct
import time
import zlib

__all__ = ["UniqKeyGenerator", "decode_uniq_key", "month_start_ms"]


def month_start_ms(now_ms: int) -> tuple[int, int]:
    """(start of the UTC month holding ``now_ms``, start of the next month), in ms."""
    import calendar         # (here: calendar loads locale and datetime, which importing the SDK needs not)
    t = time.gmtime(now_ms // 1000)
    start = calendar.timegm((t.tm_year, t.tm_mon, 1, 0, 0, 0)) * 1000
    year, month = (t.tm_year + 1, 1) if t.tm_mon == 12 else (t.tm_year, t.tm_mon + 1)
    return start, calendar.timegm((year, month, 1, 0, 0, 0)) * 1000


class UniqKeyGenerator:
    """One per client process (Java keeps it static): a fixed prefix and a counter.

    ``class_loader_hash`` stands in for Java's ``ClassLoader.hashCode()``; by default it
    is derived from ``seed`` so that it is stable for a given client set-up. Cost: one
    struct pack and a hex conversion per id.

    Safe to share between threads (Java's counter is an AtomicInteger): the counter is
    an ``itertools.count``, whose ``next`` is one step under the GIL, so two threads
    sending at once never take the same value. ``counter`` is its first value.
    """

    __slots__ = ("_prefix", "_counter", "_start", "_next_start")

    def __init__(self, ip: str = "127.0.0.1", pid: int = 0, class_loader_hash: int | None = None,
                 *, seed: str = "", counter: int = 0) -> None:
        if class_loader_hash is None:
            class_loader_hash = zlib.crc32(f"{ip}/{pid}/{seed}".encode())
        raw_ip = ipaddress.ip_address(ip).packed
        fixed = raw_ip + struct.pack(">hI", _short(pid), class_loader_hash & 0xFFFFFFFF)
        self._prefix = fixed.hex().upper()
        self._counter = itertools.count(counter)
        self._start = 0
        self._next_start = 0  # forces the month computation on first use

    def next_id(self, now_ms: int) -> str:
        """A fresh id; ``now_ms`` is the client clock's time."""
        if now_ms >= self._next_start or now_ms < self._start:
            self._start, self._next_start = month_start_ms(now_ms)
        diff = now_ms - self._start
        return self._prefix + ("%08X%04X" % (diff & 0xFFFFFFFF, next(self._counter) & 0xFFFF))


def _short(v: int) -> int:
    v &= 0xFFFF
    return v - 0x10000 if v & 0x8000 else v


def decode_uniq_key(uniq_key: str, now_ms: int | None = None) -> dict:
    """Split an id into ``ip``, ``pid``, ``class_loader_hash``, ``ms_in_month``,
    ``counter``; with ``now_ms`` also ``time_ms`` (assuming the id is from that month)."""
    raw = bytes.fromhex(uniq_key)
    if len(raw) == 16:
        ip_len = 4
    elif len(raw) == 28:
        ip_len = 16
    else:
        raise ValueError(f"not a UNIQ_KEY (expected 32 or 56 hex chars): {uniq_key!r}")
    pid, cl_hash, diff, counter = struct.unpack_from(">hIiH", raw, ip_len)
    out = {"ip": str(ipaddress.ip_address(raw[:ip_len])), "pid": pid & 0xFFFF,
           "class_loader_hash": cl_hash, "ms_in_month": diff, "counter": counter}
    if now_ms is not None:
        out["time_ms"] = month_start_ms(now_ms)[0] + diff
    return out
