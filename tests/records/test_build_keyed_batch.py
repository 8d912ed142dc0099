"""build_keyed_batch: the bytes build_batch makes of the same keyed records, one timestamp."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.records.builder import build_batch, build_keyed_batch


@settings(max_examples=300, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.binary(max_size=300), st.one_of(st.none(), st.binary(max_size=300))),
        min_size=1,
        max_size=40,
    ),
    timestamp=st.integers(min_value=0, max_value=(1 << 62)),
)
def test_the_same_bytes_as_build_batch(pairs, timestamp):
    assert build_keyed_batch(pairs, timestamp) == build_batch(pairs, timestamp=timestamp)


def test_an_empty_batch_is_refused():
    with pytest.raises(ValueError, match="at least one record"):
        build_keyed_batch([], 0)


def test_the_same_bytes_with_offset_deltas_past_one_varint_byte():
    """The coordinator appends a burst of commits as one batch of hundreds of records."""
    pairs = [(f"key-{i}".encode(), None if i % 7 == 0 else b"v" * (i % 90)) for i in range(300)]
    assert build_keyed_batch(pairs, 1) == build_batch(pairs, timestamp=1)


def test_the_same_bytes_when_record_heads_recur():
    """A group commits the same partitions over and over: the second batch of the same
    keys (the same heads, other values; then a value of another size, a tombstone and
    the keys in another order) is still build_batch's."""
    keys = [f"group/topic/{i}".encode() for i in range(12)]
    first = [(key, b"%024d" % i) for i, key in enumerate(keys)]
    again = [(key, b"%024d" % (i + 100)) for i, key in enumerate(keys)]
    changed = [*again[:5], (keys[5], b"longer value"), (keys[6], None), *again[7:]]
    for pairs in (first, again, changed, again[::-1]):
        assert build_keyed_batch(pairs, 7) == build_batch(pairs, timestamp=7)
