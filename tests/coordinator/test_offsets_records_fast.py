"""The group coordinator's record encodings written in one piece equal the general ones."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.coordinator.offsets_records import (
    OffsetValue,
    decode_offset_value,
    encode_offset_value,
)


@settings(max_examples=500, deadline=None)
@given(
    offset=st.integers(min_value=-1, max_value=(1 << 63) - 1),
    leader_epoch=st.integers(min_value=-1, max_value=(1 << 31) - 1),
    metadata=st.text(max_size=40),
    commit_timestamp=st.integers(min_value=-1, max_value=(1 << 50)),
)
def test_a_plain_commit_is_encoded_as_the_general_writer_does(
    offset, leader_epoch, metadata, commit_timestamp
):
    value = OffsetValue(offset, leader_epoch, metadata, commit_timestamp, -1)
    encoded = encode_offset_value(value)
    assert encoded == encode_offset_value(value, version=3)
    assert decode_offset_value(encoded) == value
