"""A process's memory as Linux reports it in /proc/PID/status."""
from __future__ import annotations


def status_mib(pid: int, field: str = "VmRSS") -> float:
    """``field`` of /proc/PID/status in MiB: VmRSS (all resident), RssAnon (the process's
    own heap) or RssFile (mapped file pages, which the kernel can take back)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise LookupError(f"no {field} in /proc/{pid}/status")
