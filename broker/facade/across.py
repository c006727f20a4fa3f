"""The door's reads and operations that span several brokers (a cluster's members,
up or not: each skips those stopped), and the typed values they give: what the
dashboard, the metrics, the admin commands and the SDK ask of a cluster as a whole:
its fault rules, placed as one rule on every broker, and what its stores hold. Each
delegates, in one line, to the read model or the rule behind it (broker/views/,
rocketmq_model/dead_letters.py, faults/placement.py, the store's accounting); a front
and the SDK import this, never those."""
from __future__ import annotations

from ..faults import placement as _placement
from ..faults.rules import FaultRule
from ..rocketmq_model import dead_letters as _dead
from ..rocketmq_model.dead_letters import DeadLetter, DeadLetterError, RedriveResult
from ..views import consumer_views as _consumers
from ..views import group_views as _groups
from ..views import message_life as _life
from ..views.consumer_views import DIALECTS
from ..views.rates import CONSUMED, DEAD_LETTERED, KINDS as RATE_KINDS, PRODUCED, RETRIED

__all__ = ["find_messages", "message_life", "consumer_rows", "group_detail", "known_groups", "redrive",
           "DIALECTS", "RATE_KINDS", "PRODUCED", "CONSUMED", "RETRIED", "DEAD_LETTERED",
           "place_fault_rule", "fault_rules", "remove_fault_rule", "clear_fault_rules", "store_accounts",
           "DeadLetter", "DeadLetterError", "RedriveResult"]


def find_messages(cores, text: str) -> list[dict]:
    """Messages of ``cores`` a text names: a message id, an offset id, a key or a Pulsar id."""
    return _life.find(cores, text)


def message_life(cores, ident: str, index_of=None) -> dict | None:
    """One message's life across ``cores`` (its copies, deliveries, retries), None if
    no running broker holds it; ``index_of(core)``: a core's RetryIndex (retry_index())."""
    return _life.life(cores, ident, index_of)


def consumer_rows(cores, dialect: str, index_of, query: str = "", start: int = 0,
                  limit: int = 50) -> tuple[list[dict], int]:
    """(a page of the consumer groups of a dialect, how many there are)."""
    return _consumers.consumer_rows(cores, dialect, index_of, query, start, limit)


def group_detail(cores, group: str, dialect: str, index_of) -> dict | None:
    """A group's page (its consumers, queues, ladder) in a dialect, None if unknown."""
    return _consumers.group_detail(cores, group, dialect, index_of)


def known_groups(cores) -> list[dict]:
    """Every group ``cores`` know, with its dialects and topics."""
    return _groups.known_groups(cores)


def redrive(cores, group: str, ids: list[str] | None = None, *, dry_run: bool = False) -> RedriveResult:
    """Send ``group``'s dead letters (``ids``, or all) back to their topics, on the
    brokers holding them; DeadLetterError for none or an id that is not one."""
    return _dead.redrive_on(cores, group, ids, dry_run=dry_run)


# -- fault rules on several brokers as one (broker/faults/placement.py) -----------------------
def cluster_members(core) -> list:
    """Every broker of ``core``'s cluster, up or stopped (``core`` alone when it has none):
    the cores a fault rule sent to one broker is placed on."""
    return _placement.members(core)


def add_fault_rule_document(cores, doc) -> dict:
    """Install the rule a JSON document describes (the wire's and the HTTP API's: the
    fields of ``fault add``, ``window`` and ``delay`` as durations) on every one of
    ``cores`` as one rule; the rule as JSON, with ``brokers``. FaultError, naming the
    field, for a bad rule (nothing installed)."""
    return _placement.add_everywhere(cores, doc)


def place_fault_rule(cores, rule: FaultRule) -> FaultRule:
    """Install ``rule`` (faults/rules.rule_from) on every one of ``cores`` as one rule: one
    id, its ``times`` counted across them, one hit count (its ``broker`` matcher decides
    where it fires); the rule, its id set."""
    return _placement.place(cores, rule)


def fault_rules(cores) -> list[dict]:
    """Every rule of ``cores`` once (spent ones too), as JSON, with ``brokers``: those it is on."""
    return _placement.listed(cores)


def remove_fault_rule(cores, rule_id: int) -> bool:
    """Take rule ``rule_id`` off every one of ``cores``; whether any still had it (a rule
    already gone, its count used up or removed, is not an error)."""
    return _placement.remove_everywhere(cores, rule_id)


def clear_fault_rules(cores) -> int:
    """Remove every rule of ``cores``; how many rules there were (one on several counts once)."""
    return _placement.clear_everywhere(cores)


# -- what the stores hold (store/accounting.py) -------------------------------------------------
def store_accounts(cores, ledger=None):
    """What the stores of ``cores`` hold, accounted (store/accounting.Accounts: produced,
    consumed, retried, dead-lettered ...): walked from the stores, or, given a ``ledger``
    told of every record they stored (part = the core's index in ``cores``), from it and
    their offsets now."""
    from rocketmq_emulator.store.accounting import account_message_stores, ledger_accounts

    stores = [core.store for core in cores]
    return ledger_accounts(ledger, stores) if ledger is not None else account_message_stores(stores)
