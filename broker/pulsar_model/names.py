"""Pulsar topic and subscription names ⇄ the store's names (issue 21, item 2).

Pulsar names a topic ``persistent://<tenant>/<namespace>/<local>``; clients send the full
form (``x`` means ``persistent://public/default/x``, ``t/ns/x`` means
``persistent://t/ns/x``). A partition of a partitioned topic is the topic
``<local>-partition-<i>``, a topic of its own, as in Pulsar. The store's topic names allow
only ``[%|a-zA-Z0-9_-]`` and 127 characters, so the mapping is:

  persistent://public/default/my-topic  ->  pulsar|public|default|my-topic
  persistent://t/ns/a.b                 ->  pulsar|t|ns|a%2Eb

``pulsar|`` keeps Pulsar topics apart from RocketMQ ones (no RocketMQ client names a
topic with ``|``, and no Pulsar topic can become a RocketMQ system topic such as
``rmq_sys_*`` or ``%RETRY%*``); ``|`` separates the parts; every other character outside
``[a-zA-Z0-9_-]`` is written ``%XX`` for each of its UTF-8 bytes. The mapping is one to
one and reversible (``pulsar_topic``). A subscription is a consumer group of the store
(its cursor is the group's committed offset), named by the same escaping without a prefix.
Names that do not fit get a ``PulsarNameError`` whose message is one readable line.
"""
from __future__ import annotations

import re
import unicodedata
import zlib
from dataclasses import dataclass

from ..dialects import PULSAR_STORE_PREFIX
from ..log_text import printable

__all__ = ["PulsarNameError", "PulsarTopic", "parse_topic", "store_topic", "pulsar_topic", "store_group",
           "subscription_of", "STORE_PREFIX", "ledger_id", "message_id_text", "parse_message_id", "shown_topic",
           "creatable", "named_topic", "checked_topic"]

STORE_PREFIX = PULSAR_STORE_PREFIX
_DOMAINS = ("persistent", "non-persistent")
_PLAIN = re.compile(r"[a-zA-Z0-9_-]")
_ESCAPED = re.compile(r"%([0-9A-F]{2})")
_TOPIC_MAX = 127                       # the store's (RocketMQ's) topic name limit
_GROUP_MAX = 120
_PARTITION = re.compile(r"^(.*)-partition-(\d+)$")
# Pulsar's NamedEntity: the characters of a tenant, namespace or (strictly) topic name
# (Java's \w is ASCII: letters, digits, underscore)
_NAMED_ENTITY = re.compile(r"[-=:.a-zA-Z0-9_]+")


class PulsarNameError(ValueError):
    """A topic or subscription name this broker cannot take; the message is one line."""


@dataclass(frozen=True, slots=True)
class PulsarTopic:
    domain: str
    tenant: str
    namespace: str
    local: str

    @property
    def full(self) -> str:
        return f"{self.domain}://{self.tenant}/{self.namespace}/{self.local}"

    @property
    def partition(self) -> int:
        """The partition index of ``<local>-partition-<i>``, -1 for a whole topic."""
        m = _PARTITION.match(self.local)
        return int(m.group(2)) if m else -1

    @property
    def partitioned_base(self) -> "PulsarTopic":
        """The topic a partition belongs to (itself when it is not a partition)."""
        m = _PARTITION.match(self.local)
        return PulsarTopic(self.domain, self.tenant, self.namespace, m.group(1)) if m else self


def parse_topic(name: str) -> PulsarTopic:
    """A topic name in any of the forms clients accept, as its full parts."""
    if not isinstance(name, str) or not name.strip():
        raise PulsarNameError("the topic name is blank")
    domain, sep, rest = name.partition("://")
    if not sep:
        domain, rest = "persistent", name
    elif domain not in _DOMAINS:
        raise PulsarNameError(f"topic {name!r}: the domain must be persistent or non-persistent, not {domain!r}")
    parts = rest.split("/")
    if len(parts) == 1 and not sep:
        parts = ["public", "default"] + parts
    if len(parts) != 3:
        raise PulsarNameError(f"topic {name!r} is not <tenant>/<namespace>/<name> (the legacy form with a cluster "
                              f"is not supported)")
    if any(not p for p in parts):
        raise PulsarNameError(f"topic {name!r} has an empty part")
    return PulsarTopic(domain, *parts)


def creatable(topic: PulsarTopic) -> PulsarTopic:
    """``topic``, when the admin API may create it, else a PulsarNameError with a reason
    (a 412). The tenant and namespace take NamedEntity's characters, as Pulsar checks
    them. A local name takes what a default Pulsar broker takes (strictTopicNameEnabled is
    off by default: quotes, ``<``, spaces are made, apache/pulsar#20231), except a dot
    segment (``.``, ``..``: a URL path resolves it away, no request can name it) and
    characters no one can see or type in a name: control characters (a newline, ESC) and
    format characters (a right-to-left override, a zero-width space), which would forge
    or hide what an operator reads. (The binary protocol takes any local name.)"""
    for part in (topic.tenant, topic.namespace):
        if not _NAMED_ENTITY.fullmatch(part):
            raise PulsarNameError(f"Namespace name is not valid: '{printable(part, 80)}' (a tenant or namespace "
                                  f"takes a-z, A-Z, 0-9 and _-=:.)")
    local = topic.local
    if local in (".", "..") or any(unicodedata.category(c) in ("Cc", "Cf") for c in local):
        raise PulsarNameError(f"Topic name is not valid: '{printable(local, 80)}' (not . or .., and no control or "
                              f"invisible format characters)")
    return topic


def _escape(text: str) -> str:
    return "".join(c if _PLAIN.fullmatch(c) else "".join(f"%{b:02X}" for b in c.encode()) for c in text)


def _unescape(text: str) -> str:
    return _ESCAPED.sub(lambda m: chr(int(m.group(1), 16)), text).encode("latin-1").decode()


def store_topic(name: str | PulsarTopic) -> str:
    """The store's topic for a Pulsar topic (see the module notes)."""
    t = name if isinstance(name, PulsarTopic) else parse_topic(name)
    if t.domain != "persistent":
        raise PulsarNameError(f"topic {t.full!r}: non-persistent topics are not supported; use persistent://")
    out = STORE_PREFIX + "|".join(_escape(p) for p in (t.tenant, t.namespace, t.local))
    if len(out) > _TOPIC_MAX:
        raise PulsarNameError(f"topic {t.full!r} is too long for the store ({len(out)} characters once mapped, "
                              f"at most {_TOPIC_MAX})")
    return out


def checked_topic(name: str | PulsarTopic) -> PulsarTopic:
    """A topic of either domain, held to the names the store takes (a non-persistent
    topic is never stored, but is named as its persistent twin would be, so every view
    and command can show and take it alike)."""
    t = name if isinstance(name, PulsarTopic) else parse_topic(name)
    store_topic(PulsarTopic("persistent", t.tenant, t.namespace, t.local) if t.domain != "persistent" else t)
    return t


def pulsar_topic(stored: str) -> PulsarTopic | None:
    """The Pulsar topic a store topic holds; None for a topic that is not a Pulsar one."""
    if not stored.startswith(STORE_PREFIX):
        return None
    parts = stored[len(STORE_PREFIX):].split("|")
    if len(parts) != 3:
        return None
    return PulsarTopic("persistent", *(_unescape(p) for p in parts))


def shown_topic(stored: str) -> str:
    """A store topic as its users name it: a Pulsar topic's full name, any other as it is."""
    t = pulsar_topic(stored)
    return t.full if t is not None else stored


def named_topic(name: str, known) -> str | None:
    """The store topic of ``known`` (store names) that a user's ``name`` names: the topic of
    that name (a RocketMQ topic, or a Pulsar one by its store name), else the Pulsar topic
    it names in any form a Pulsar client takes (``persistent://t/ns/x``, ``t/ns/x``, ``x``:
    so a short name is the Pulsar topic only where no RocketMQ topic has it); None when
    it names none of them."""
    if name in known:
        return name
    try:
        stored = store_topic(name)
    except PulsarNameError:
        return None
    return stored if stored in known else None


def store_group(subscription: str) -> str:
    """The store's consumer group for a subscription name."""
    if not isinstance(subscription, str) or not subscription:
        raise PulsarNameError("the subscription name is blank")
    out = _escape(subscription)
    if len(out) > _GROUP_MAX:
        raise PulsarNameError(f"subscription {subscription!r} is too long ({len(out)} characters once mapped, "
                              f"at most {_GROUP_MAX})")
    return out


def subscription_of(group: str) -> str:
    return _unescape(group)


# A Pulsar message id as clients print it: "(ledger,entry,partition,batch)" (Python), or
# "ledger:entry:partition[:batch]" (Java, pulsar-admin).
_MESSAGE_ID = re.compile(r"^\(?\s*(\d+)\s*[,:]\s*(\d+)\s*(?:[,:]\s*(-?\d+)\s*)?(?:[,:]\s*(-?\d+)\s*)?\)?$")


def ledger_id(stored_topic: str) -> int:
    """The ledgerId of a store topic's messages: stable across restarts, distinct per topic
    (the client's trackers key on (ledger, entry) across topics); the entry id is the
    message's queue offset."""
    return zlib.crc32(stored_topic.encode()) | (len(stored_topic) << 32)


def message_id_text(stored_topic: str, offset: int) -> str:
    """The message id of the entry at ``offset`` of a store topic, as pulsar-admin prints it."""
    return f"{ledger_id(stored_topic)}:{offset}:-1"


def parse_message_id(text: str) -> tuple[int, int] | None:
    """(ledger, entry) of a Pulsar message id in either printed form, None for other text."""
    m = _MESSAGE_ID.match(text.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None
