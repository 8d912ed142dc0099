"""The broker's own XXH32 (KAFKA-3160's lz4 header checksum for magic 0 messages; the
broker does not depend on the ``xxhash`` package) against ``xxhash`` itself, over what
it is for: a frame descriptor, magic included, under 16 bytes (no 16-byte stripes)."""

import xxhash
from hypothesis import given
from hypothesis import strategies as st

from tidelog.records.legacy import _xxh32


@given(st.binary(max_size=15))
def test_it_equals_xxhash_for_any_input(data):
    assert _xxh32(data) == xxhash.xxh32_intdigest(data)


def test_it_covers_every_length_of_a_descriptor():
    for size in range(16):
        data = bytes(range(size))
        assert _xxh32(data) == xxhash.xxh32_intdigest(data), size
