"""A delay table from a messageDelayLevel string, for tests (the broker builds it so)."""
from rocketmq_emulator.delay_scheduler import DelayLevels
from rocketmq_emulator.store.config import DEFAULT_MESSAGE_DELAY_LEVEL, parse_delay_table

__all__ = ["levels_of", "DEFAULT_MESSAGE_DELAY_LEVEL"]


def levels_of(text: str) -> DelayLevels:
    return DelayLevels(parse_delay_table(text))
