"""Pulsar producers on a topic (issue 41, items 3 and 4): access modes, the topic epoch,
producer names, and each producer name's last sequence id, with deduplication.

Access modes, as Pulsar's AbstractTopic decides them. ``Shared`` producers coexist,
each with a name of its own on the topic (a second producer under a name already
connected is ProducerBusy). ``Exclusive`` takes a topic with no producer at all, else
it is fenced (ProducerFenced); once it holds the topic, a Shared one is ProducerBusy.
``ExclusiveWithFencing`` closes every producer the topic has (they are told to
reconnect, and come back fenced, their topic epoch being behind) and takes it.
``WaitForExclusive`` queues behind whoever holds the topic and is promoted, in order,
when the topic has no producer left. Each exclusive holder moves the topic epoch on by
one; a producer that reconnects with an epoch older than the topic's has been replaced
in between, and is fenced.

Sequence ids. Every stored message of a named producer carries its name and sequence
id in two record properties (PRODUCER_PROPERTY, SEQUENCE_PROPERTY: for a batch its
highest, for a chunked message on its last chunk only); the last one per name is what
PRODUCER_SUCCESS answers a producer that comes back under that name, so it goes on
from there. With deduplication on (the topic's, its namespace's or the broker's
``brokerDeduplicationEnabled`` policy), a message whose sequence id is not above the
last stored one is a resend: acknowledged, not stored again. The map is the log's:
saved at each flush with the offset it covers (config/pulsarProducers.json), and on
the first use of a topic after a start the records past that offset are read for the
names and sequence ids they carry — Pulsar's deduplication cursor, snapshot plus replay,
so a crash between two flushes loses nothing.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Callable

from ..java_fields import as_java_long

__all__ = ["PulsarProducers", "TopicProducers", "AccessMode", "Admission", "PRODUCER_PROPERTY",
           "SEQUENCE_PROPERTY", "PRODUCERS_CONFIG"]

PRODUCER_PROPERTY = "PULSAR_PRODUCER"
SEQUENCE_PROPERTY = "PULSAR_SEQUENCE_ID"
PRODUCERS_CONFIG = "pulsarProducers"                # config/pulsarProducers.json


class AccessMode(enum.IntEnum):
    SHARED = 0
    EXCLUSIVE = 1
    WAIT_FOR_EXCLUSIVE = 2
    EXCLUSIVE_WITH_FENCING = 3


@dataclass(slots=True)
class Admission:
    """What became of a producer that asked for a topic: ``ready`` (with the topic epoch
    to tell it, None when the topic has none), ``waiting`` (WaitForExclusive: queued), or
    refused with ``error`` ("busy": ProducerBusy, "fenced": ProducerFenced) and why."""

    ready: bool = False
    waiting: bool = False
    error: str | None = None
    message: str = ""
    epoch: int | None = None
    last_sequence_id: int = -1
    fenced: list = field(default_factory=list)      # producers to close: an ExclusiveWithFencing took over


@dataclass(slots=True)
class TopicProducers:
    """One store topic's producers. ``sequences`` and ``dedup`` are read and written by the
    Pulsar front on every SEND (a dict and a flag: no call)."""

    topic: str
    sequences: dict[str, int] = field(default_factory=dict)     # name -> last sequence id stored
    dedup: bool = False
    compacting: bool = False                                     # it has a compaction threshold
    epoch: int | None = None
    names: dict[str, object] = field(default_factory=dict)      # name -> producer key, attached
    modes: dict[object, AccessMode] = field(default_factory=dict)
    exclusive: str | None = None                                 # the name holding the topic
    waiting: list = field(default_factory=list)                  # [(key, name, topic_epoch)] in order


def _next_epoch(t: TopicProducers, asked: int | None) -> int:
    """The epoch an exclusive producer takes a topic at: the one it asked for, else the
    topic's + 1 (a long, as Pulsar's: past Long.MAX_VALUE it wraps)."""
    if asked is not None:
        return asked
    return as_java_long((t.epoch if t.epoch is not None else -1) + 1)


class PulsarProducers:
    def __init__(self, store, dedup_of: Callable[[str], bool], first_offset: Callable[[str], int],
                 compacting: Callable[[str], bool] = lambda topic: False) -> None:
        """``dedup_of(topic)``: whether deduplication applies to a store topic (its
        policy); ``first_offset(topic)``: where the topic's live records begin;
        ``compacting(topic)``: whether it has a compaction threshold (the front reports
        what it stores into such a topic)."""
        self.store = store
        self.dedup_of = dedup_of
        self.compacting = compacting
        self.first_offset = first_offset
        self._topics: dict[str, TopicProducers] = {}
        self._of: dict[object, TopicProducers] = {}                 # producer key -> its topic
        self._saved: dict | None = None

    def topic(self, stored: str) -> TopicProducers:
        """A topic's producers, its sequence ids read back from the log on first use."""
        t = self._topics.get(stored)
        if t is None:
            t = self._topics[stored] = TopicProducers(stored, dedup=bool(self.dedup_of(stored)),
                                                      compacting=bool(self.compacting(stored)))
            self._recover(t)
        return t

    def attach(self, stored: str, key, name: str, mode: AccessMode, topic_epoch: int | None) -> Admission:
        """``key`` (a producer) asks for ``stored`` under ``name`` in ``mode``, with the topic
        epoch it had (None: its first time), a long as every number here is."""
        t = self.topic(stored)
        last = t.sequences.get(name, -1)
        holder = t.exclusive
        if mode is AccessMode.SHARED:
            if holder is not None or t.waiting:
                return Admission(error="busy", message=f"Topic has an existing exclusive producer: {holder}")
        elif mode is AccessMode.EXCLUSIVE:
            if holder is not None or t.waiting:
                return Admission(error="fenced", message=f"Topic has an existing exclusive producer: {holder}")
            if t.names:
                return Admission(error="fenced", message="Topic has existing shared producers")
        elif mode is AccessMode.WAIT_FOR_EXCLUSIVE:
            if holder is not None or t.names:
                t.waiting.append((key, name, topic_epoch))
                self._of[key] = t
                t.modes[key] = mode
                return Admission(waiting=True, last_sequence_id=last)
        fenced = []
        if mode is AccessMode.EXCLUSIVE_WITH_FENCING and (holder is not None or t.names or t.waiting):
            fenced = [k for k, _, _ in t.waiting] + list(t.names.values())
            for k in fenced:
                self._forget(t, k)
            t.waiting.clear()
        if mode is not AccessMode.SHARED and topic_epoch is not None and t.epoch is not None \
                and topic_epoch < t.epoch:
            return Admission(error="fenced", fenced=fenced,
                             message=f"Topic epoch has already moved. Current epoch: {t.epoch}, Producer epoch: "
                                     f"{topic_epoch}")
        if name in t.names:
            return Admission(error="busy", fenced=fenced,
                             message=f"Producer with name '{name}' is already connected to topic '{stored}'")
        if mode is not AccessMode.SHARED:
            t.exclusive = name
            t.epoch = _next_epoch(t, topic_epoch)
        t.names[name] = key
        t.modes[key] = mode
        self._of[key] = t
        return Admission(ready=True, epoch=t.epoch, last_sequence_id=last, fenced=fenced)

    def detach(self, key) -> list[tuple[object, Admission]]:
        """``key`` closed (or its connection did): the waiting producers that take the
        topic now, each with its admission."""
        t = self._of.get(key)
        if t is None:
            return []
        self._forget(t, key)
        promoted = []
        if t.exclusive is None and not t.names and t.waiting:
            key2, name, topic_epoch = t.waiting.pop(0)
            t.exclusive = name
            t.epoch = _next_epoch(t, topic_epoch)
            t.names[name] = key2
            promoted.append((key2, Admission(ready=True, epoch=t.epoch, last_sequence_id=t.sequences.get(name, -1))))
        return promoted

    def _forget(self, t: TopicProducers, key) -> None:
        self._of.pop(key, None)
        t.modes.pop(key, None)
        t.waiting[:] = [w for w in t.waiting if w[0] is not key]
        for name, k in list(t.names.items()):
            if k is key:
                del t.names[name]
                if t.exclusive == name:
                    t.exclusive = None

    def producers_of(self, stored: str) -> list[tuple[str, object, AccessMode]]:
        """(name, key, access mode) of the producers attached to a topic."""
        t = self._topics.get(stored)
        return [(name, key, t.modes.get(key, AccessMode.SHARED)) for name, key in t.names.items()] if t else []

    def refresh(self) -> None:
        """A policy changed: every topic in use reads its own again."""
        for t in self._topics.values():
            t.dedup = bool(self.dedup_of(t.topic))
            t.compacting = bool(self.compacting(t.topic))

    def forget_topic(self, stored: str) -> list:
        """A deleted topic: its sequence ids go with it; returns its producers' keys."""
        t = self._topics.pop(stored, None)
        self._loaded().pop(stored, None)
        if t is None:
            return []
        keys = list(t.names.values()) + [k for k, _, _ in t.waiting]
        for k in keys:
            self._of.pop(k, None)
        return keys

    # -- durability ---------------------------------------------------------------------------------
    def save(self) -> None:
        """At flush: each topic's sequence ids with the offset they cover, and its epoch."""
        doc = dict(self._loaded())
        changed = False
        for stored, t in self._topics.items():
            entry = {"offset": self.store.max_offset(stored, 0), "sequences": dict(t.sequences)}
            if t.epoch is not None:
                entry["epoch"] = t.epoch
            if doc.get(stored) != entry:
                doc[stored] = entry
                changed = True
        if changed:
            self.store.save_config(PRODUCERS_CONFIG, doc)
            self._saved = doc

    def _loaded(self) -> dict:
        if self._saved is None:
            self._saved = self.store.load_config(PRODUCERS_CONFIG) or {}
        return self._saved

    def _recover(self, t: TopicProducers) -> None:
        """The saved map, then the records past the offset it covers (the log is the truth)."""
        saved = self._loaded().get(t.topic) or {}
        # (as longs: a document written before they were, or by hand, may hold more)
        t.sequences.update({str(k): as_java_long(int(v)) for k, v in (saved.get("sequences") or {}).items()})
        if saved.get("epoch") is not None:
            t.epoch = as_java_long(int(saved["epoch"]))
        store = self.store
        start = max(int(saved.get("offset", 0)), self.first_offset(t.topic))
        for offset in range(start, store.max_offset(t.topic, 0)):
            rec = store.record_at(t.topic, 0, offset)
            if rec is None:
                continue
            name, seq = rec.properties.get(PRODUCER_PROPERTY), rec.properties.get(SEQUENCE_PROPERTY)
            if name and seq and len(seq) <= 20 and seq.lstrip("-").isdigit():      # (a long's digits)
                t.sequences[name] = max(as_java_long(int(seq)), t.sequences.get(name, -1))
