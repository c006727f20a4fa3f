"""Held pulls by deadline (broker/rocketmq_model/long_polling.py): whichever way a pull
leaves — a message arrives, its timeout passes, it is released, its connection closes —
the next deadline, the pulls waiting before a time and the expired ones are those of the
pulls still held, checked against a plain list of them."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emulator.broker.rocketmq_model.long_polling import HeldPull, PullHoldService


def held(channel, queue_id, offset, deadline):
    return HeldPull(channel=channel, request=None, context=None, topic="T", queue_id=queue_id, offset=offset,
                    code_set=None, deadline_ms=deadline)


steps = st.lists(st.one_of(
    st.tuples(st.just("hold"), st.sampled_from("ab"), st.integers(0, 1), st.integers(0, 5), st.integers(0, 50)),
    st.tuples(st.just("arrive"), st.integers(0, 1), st.integers(0, 5)),
    st.tuples(st.just("release"), st.integers(0, 20)),
    st.tuples(st.just("drop"), st.sampled_from("ab")),
    st.tuples(st.just("expire"), st.integers(0, 50)),
), max_size=40)


@settings(max_examples=300, deadline=None)
@given(steps)
def test_the_deadlines_are_those_of_the_pulls_still_held(script):
    holds = PullHoldService()
    model: list[HeldPull] = []                  # held, in the order they were held
    for step in script:
        kind = step[0]
        if kind == "hold":
            h = held(*step[1:])
            holds.hold(h)
            model.append(h)
        elif kind == "arrive":
            ready = holds.arrived("T", step[1], step[2], {})
            want = [h for h in model if h.queue_id == step[1] and h.offset <= step[2]]
            assert ready == want
            model = [h for h in model if h not in want]
        elif kind == "release" and model:
            h = model.pop(step[1] % len(model))
            holds.release(h)
        elif kind == "drop":
            holds.drop_channel(step[1])
            model = [h for h in model if h.channel != step[1]]
        elif kind == "expire":
            out = holds.expired(step[1])
            want = sorted((h for h in model if h.deadline_ms <= step[1]), key=lambda h: (h.deadline_ms, h.seq))
            assert out == want
            model = [h for h in model if h not in want]
        by_time = sorted(model, key=lambda h: (h.deadline_ms, h.seq))
        assert holds.next_deadline() == (by_time[0].deadline_ms if by_time else None)
        assert holds.waiting(25) == [h for h in by_time if h.deadline_ms < 25]
        assert len(holds) == len(model) and all(not h.done for h in model)


def test_held_before_a_mark_answers_only_the_older_pulls_still_waiting():
    holds = PullHoldService()
    first, second = held("a", 0, 0, 100), held("a", 0, 0, 50)
    holds.hold(first)
    holds.hold(second)
    mark = holds.mark()
    late = held("a", 0, 0, 10)
    holds.hold(late)
    holds.release(second)
    assert holds.held_before(mark) == [first]
    assert holds.next_deadline() == 10 and holds.waiting(1 << 62) == [late]
