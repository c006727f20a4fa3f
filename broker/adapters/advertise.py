"""The address routes advertise (brokerIP1), chosen as upstream chooses it.

A RocketMQ broker tells clients where to connect in every route (brokerAddrs) and in
every offsetMsgId (the store host): brokerIP1, which defaults to
RemotingUtil.getLocalAddress() — the first IPv4 address of the machine's interfaces
that is not loopback, 127.0.* or 192.168.*, else the last IPv4 address found, else the
first IPv6 one, else the host name's address. ``serve --host`` is the address to bind:
when it is a wildcard (0.0.0.0, ::) it must never be advertised, or every client would
connect to itself. A name (``localhost``) is resolved, since a record's store host is
an IP address.
"""
from __future__ import annotations

import ipaddress
import logging
import os
import socket
import struct
import sys

__all__ = ["advertised_ip", "pick_local_address", "local_addresses", "is_wildcard"]

log = logging.getLogger("broker")

_WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]", "*"})


def is_wildcard(host: str | None) -> bool:
    return host is None or host.strip() in _WILDCARDS


def advertised_ip(bind_host: str, broker_ip1: str | None = None, *,
                  addresses: tuple[list[str], list[str]] | None = None) -> str:
    """The IP address to advertise for a server bound to ``bind_host``: ``broker_ip1``
    (broker.conf's brokerIP1) when set, else ``bind_host`` unless it is a wildcard, else
    upstream's first non-loopback address (``addresses``: (IPv4, IPv6) lists, for tests;
    read from the machine when None). Binding a wildcard logs one WARNING line. A name
    that does not resolve raises ValueError with a one-line message."""
    if broker_ip1 and not is_wildcard(broker_ip1):
        chosen, why = _ip_of(broker_ip1), "brokerIP1"
    elif not is_wildcard(bind_host):
        return _ip_of(bind_host)
    else:
        ipv4, ipv6 = addresses if addresses is not None else local_addresses()
        found = pick_local_address(ipv4, ipv6)
        chosen = found or "127.0.0.1"
        why = ("the first non-loopback address; set brokerIP1 in broker.conf to choose another" if found else
               "no non-loopback address was found, so only clients on this machine can use the routes; "
               "set brokerIP1 in broker.conf")
    if is_wildcard(bind_host):
        log.warning("listening on every interface (%s): anyone who can reach this port can send, consume and "
                    "change topics, with no authentication; routes advertise %s (%s)",
                    bind_host or "0.0.0.0", chosen, why)
    return chosen


def pick_local_address(ipv4: list[str], ipv6: list[str]) -> str | None:
    """getLocalAddress's choice among non-loopback addresses, in interface order."""
    ipv4 = [ip for ip in ipv4 if not _loopback(ip)]
    ipv6 = [ip for ip in ipv6 if not _loopback(ip)]
    for ip in ipv4:
        if not ip.startswith(("127.0", "192.168")):
            return ip
    if ipv4:
        return ipv4[-1]
    return ipv6[0] if ipv6 else None


def local_addresses() -> tuple[list[str], list[str]]:
    """(IPv4, IPv6) addresses of this machine's interfaces, in interface order where
    the platform tells it (Linux), else those the host name resolves to."""
    ipv4, ipv6 = ([], []) if not sys.platform.startswith("linux") else (_linux_ipv4(), _linux_ipv6())
    if not ipv4 and not ipv6:
        try:
            infos = socket.getaddrinfo(socket.gethostname(), None, proto=socket.IPPROTO_TCP)
        except OSError:
            infos = []
        for family, *_, sockaddr in infos:
            (ipv4 if family == socket.AF_INET else ipv6).append(sockaddr[0])
    return ipv4, ipv6


def _linux_ipv4() -> list[str]:
    import fcntl

    siocgifaddr = 0x8915
    out = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for _, name in socket.if_nameindex():
            if _bridge(name):
                continue
            try:
                raw = fcntl.ioctl(s.fileno(), siocgifaddr, struct.pack("256s", name.encode()[:15]))
            except OSError:         # an interface without an IPv4 address
                continue
            out.append(socket.inet_ntoa(raw[20:24]))
    return out


def _linux_ipv6() -> list[str]:
    try:
        with open("/proc/net/if_inet6") as f:
            rows = [line.split() for line in f]
    except OSError:
        return []
    # address, interface index, prefix length, scope (0x20 = link-local: needs a zone), flags, name
    return [str(ipaddress.IPv6Address(bytes.fromhex(r[0]))) for r in rows
            if len(r) >= 6 and r[3] != "20" and not _bridge(r[5])]


def _bridge(interface: str) -> bool:
    """A bridge (docker0, virbr0): upstream's isBridge skips them."""
    return os.path.exists(f"/sys/class/net/{interface}/bridge")


def _loopback(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).is_loopback
    except ValueError:
        return True


def _ip_of(host: str) -> str:
    """``host`` if it is an IP address, else the first address it resolves to."""
    host = host.strip().strip("[]")
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError as exc:
        raise ValueError(f"{host!r} is not an IP address and does not resolve ({exc.strerror or exc})") from None
    infos.sort(key=lambda info: info[0] != socket.AF_INET)     # IPv4 first, as upstream prefers
    return infos[0][4][0]
