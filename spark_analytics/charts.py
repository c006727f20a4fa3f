"""matplotlib charts for the report (Agg backend: no display).

Input is plain rows (lists of dicts, as report.py collects them), so the charts know
nothing of Spark. Every chart has a title, labelled axes and units in the labels, and
axes that start at zero. Each function returns the PNG bytes; or, when the rows hold
nothing to compare (all zero, a single attempt), a sentence saying so, which the report
shows instead of a chart with a meaningless axis; or None when there are no rows at
all (the table below it says "(none)").
"""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import LogLocator, MaxNLocator, ScalarFormatter  # noqa: E402

__all__ = ["outcomes_chart", "funnel_chart", "lateness_chart", "lag_chart", "retried_chart", "violations_chart",
           "cpu_histogram_chart", "Chart"]

Chart = bytes | str | None          # PNG, a sentence instead of a chart, or nothing

_COLORS = {"succeeded": "#2e7d32", "dead_lettered": "#c62828", "in_flight": "#f9a825",
           "p50": "#1565c0", "p99": "#6a1b9a", "max": "#ef6c00", "lag": "#00838f"}


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


def _label(r: dict) -> str:
    return f"{r['group']}\n{r['topic']}"


def outcomes_chart(per_group: list[dict]) -> Chart:
    """Stacked bars per (group, topic): succeeded / dead-lettered / in flight."""
    if not per_group:
        return None
    if not any(r["produced"] for r in per_group):
        return "No message has been produced to these groups' topics yet: nothing to chart."
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(per_group) + 2), 3.8))
    labels = [_label(r) for r in per_group]
    bottom = [0] * len(per_group)
    for key, name in (("succeeded", "succeeded"), ("dead_lettered", "dead-lettered"), ("in_flight", "in flight")):
        vals = [max(0, r[key]) for r in per_group]
        ax.bar(labels, vals, bottom=bottom, label=name, color=_COLORS[key])
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("messages")
    ax.set_title("Outcome of produced messages, per group and topic")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, max(bottom) * 1.25 + 1)                  # head room for the legend
    ax.legend(frameon=False, fontsize=8, ncol=3, loc="upper left")
    return _png(fig)


def funnel_chart(funnel: list[dict], max_series: int = 6) -> Chart:
    """Messages delivered at each reconsumeTimes (log scale), one line per group/topic."""
    if not funnel:
        return None
    if all(r["reconsume_times"] == 0 for r in funnel):
        n = sum(r["delivered"] for r in funnel)
        return (f"No message needed a second attempt: all {n:,} deliveries were first deliveries "
                "(reconsumeTimes 0), so there is no funnel to draw.")
    series: dict[str, list[tuple[int, int]]] = {}
    for r in funnel:
        series.setdefault(f"{r['group']} / {r['topic']}", []).append((r["reconsume_times"], r["delivered"]))
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for name, pts in list(series.items())[:max_series]:
        pts.sort()
        ax.plot([p[0] for p in pts], [max(p[1], 0.8) for p in pts], marker="o", label=name)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(ScalarFormatter())
    # labels at 2x and 5x only: all of 2..9 collide with the powers of ten
    ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
    ax.yaxis.set_minor_formatter(ScalarFormatter())
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("reconsumeTimes (0 = first delivery)")
    ax.set_ylabel("messages delivered (log)")
    ax.set_title("Retry funnel: how many messages reached each attempt")
    ax.legend(frameon=False, fontsize=8)
    ax.grid(alpha=0.3)
    return _png(fig)


def lateness_chart(by_level: list[dict]) -> Chart:
    """p50 / p99 / max lateness of re-stored delayed messages per delay level."""
    if not by_level:
        return None
    rows = [r for r in by_level if r.get("delivered")]
    if not rows:
        pending = sum(r.get("pending") or 0 for r in by_level)
        return (f"None of the {pending:,} scheduled messages has been re-stored yet, so there is no lateness to "
                "chart. (On a virtual-clock server time moves only with `rocketmq-emulator clock advance`.)")
    worst = max((r.get("max_ms") or 0) for r in rows)
    if worst <= 0:
        n = sum(r["delivered"] for r in rows)
        return (f"All {n:,} delayed messages were re-stored exactly when due (0 ms late at every level), so there "
                "is no lateness to chart. That is what a virtual clock gives (a store written by `simulate` or a "
                "`--clock virtual` server): time jumps to each due time and the message is re-stored at that "
                "instant. On a real clock the scheduler's tick and load show up here.")
    unit, scale = ("ms", 1) if worst < 2000 else ("s", 1000)
    fig, ax = plt.subplots(figsize=(7, 3.8))
    x = list(range(len(rows)))
    w = 0.27
    for i, key in enumerate(("p50", "p99", "max")):
        vals = [(r[f"{key}_ms"] or 0) / scale for r in rows]
        ax.bar([v + (i - 1) * w for v in x], vals, width=w, label=key, color=_COLORS[key])
    ax.set_xticks(x, [f"L{r['level']}\n{_fmt_ms(r.get('delay_ms'))}" for r in rows])
    ax.set_ylim(0, worst / scale * 1.15)
    ax.set_xlabel("delay level (and its delay)")
    ax.set_ylabel(f"late by ({unit})")
    ax.set_title("Delivery lateness: re-store time minus due time")
    ax.legend(frameon=False, fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _png(fig)


def lag_chart(lag: list[dict]) -> Chart:
    """Consumer lag (max offset - committed) per group / topic / queue, one bar each."""
    if not lag:
        return None
    if not any(r["lag"] for r in lag):
        return (f"No consumer lag: on all {len(lag)} queues in the offset table the committed offset is at the "
                "queue's end.")
    rows = list(reversed(lag))                               # first row on top
    fig, ax = plt.subplots(figsize=(7, max(2.2, 0.32 * len(rows) + 1.2)))
    clustered = len({r.get("broker") for r in rows}) > 1          # name the broker when there are several
    labels = [f"{r['group']} · {r['topic']} · {r['broker'] + ' ' if clustered else ''}q{r['queue_id']}"
              for r in rows]
    bars = ax.barh(labels, [r["lag"] for r in rows], color=_COLORS["lag"])
    for bar, r in zip(bars, rows):
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, f" {r['lag']}", va="center", fontsize=8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(0, max(r["lag"] for r in rows) * 1.15)
    ax.set_xlabel("messages behind")
    ax.set_title("Consumer lag per queue (max offset - committed offset)")
    ax.tick_params(axis="y", labelsize=8)
    return _png(fig)


def retried_chart(retried: list[dict]) -> Chart:
    """How many messages were retried 1, 2, ... n times, per group / topic."""
    if not retried:
        return None
    series: dict[str, dict[int, int]] = {}
    for r in retried:
        series.setdefault(f"{r['group']} / {r['topic']}", {})[r["retries"]] = r["messages"]
    xs = sorted({r["retries"] for r in retried})
    fig, ax = plt.subplots(figsize=(7, 3.8))
    w = 0.8 / max(1, len(series))
    for i, (name, d) in enumerate(series.items()):
        ax.bar([x + i * w for x in range(len(xs))], [d.get(x, 0) for x in xs], width=w, label=name)
    ax.set_xticks([x + 0.4 - w / 2 for x in range(len(xs))], [str(x) for x in xs])
    ax.set_xlabel("times retried")
    ax.set_ylabel("messages")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, max(r["messages"] for r in retried) * 1.15)
    ax.set_title("Messages by number of retries")
    ax.legend(frameon=False, fontsize=8)
    return _png(fig)


def violations_chart(by_kind: list[dict]) -> Chart:
    """A swarm's failing seeds per invariant."""
    if not by_kind:
        return "Every invariant held in every seed: nothing to chart."
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(by_kind) + 2), 3.6))
    ax.bar([r["invariant"] for r in by_kind], [r["seeds"] for r in by_kind], color=_COLORS["dead_lettered"])
    ax.set_xlabel("invariant")
    ax.set_ylabel("failing seeds")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylim(0, max(r["seeds"] for r in by_kind) * 1.15)
    ax.set_title("Seeds that broke each invariant")
    return _png(fig)


def cpu_histogram_chart(bins: list[dict]) -> Chart:
    """A swarm's CPU seconds per seed: seeds per bin (``low``, ``high``, ``seeds``)."""
    if not bins:
        return None
    fig, ax = plt.subplots(figsize=(7, 3.6))
    ax.bar([r["low"] for r in bins], [r["seeds"] for r in bins], width=[r["high"] - r["low"] for r in bins],
           align="edge", color=_COLORS["p50"], edgecolor="white")
    ax.set_xlabel("CPU seconds per seed")
    ax.set_ylabel("seeds")
    ax.set_xlim(0, max(r["high"] for r in bins) * 1.05)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("CPU time per seed")
    return _png(fig)


def _fmt_ms(ms) -> str:
    if not ms:
        return "?"
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"
