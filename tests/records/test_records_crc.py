"""CRC32C of record batches."""

from tidelog.records.batch import CRC_OFFSET, read_batch_header, rewrite_base_offset_and_epoch
from tidelog.records.builder import build_batch
from tidelog.records.crc import batch_crc, crc32c, is_crc_valid


def test_crc32c_check_value():
    # The standard CRC-32C (Castagnoli) check value.
    assert crc32c(b"123456789") == 0xE3069283
    assert crc32c(b"") == 0


def test_crc32c_accepts_memoryview():
    assert crc32c(memoryview(b"xx123456789")[2:]) == 0xE3069283


def test_batch_crc_covers_attributes_to_end():
    batch = build_batch([(b"k", b"v")], timestamp=1)
    header = read_batch_header(batch)
    assert batch_crc(batch, header) == header.crc == crc32c(batch[21:])
    assert is_crc_valid(batch, header)


def test_flipped_byte_inside_crc_range_is_detected():
    batch = bytearray(build_batch([(b"k", b"value")], timestamp=1))
    header = read_batch_header(batch)
    for position in (21, 40, len(batch) - 1):
        damaged = bytearray(batch)
        damaged[position] ^= 0x01
        assert not is_crc_valid(damaged, header)


def test_base_offset_and_leader_epoch_are_outside_the_crc():
    batch = bytearray(build_batch([(b"k", b"v")], timestamp=1))
    rewrite_base_offset_and_epoch(batch, 0, 123456789, 42)
    header = read_batch_header(batch)
    assert header.base_offset == 123456789
    assert header.partition_leader_epoch == 42
    assert is_crc_valid(batch, header)
    assert int.from_bytes(batch[CRC_OFFSET : CRC_OFFSET + 4], "big") == header.crc


def test_batch_in_a_window_uses_the_given_offset():
    batch = build_batch([(b"k", b"v")], timestamp=1)
    window = b"\x00" * 7 + batch
    # The header says where the batch sits in its file (here 1000), the window holds it at 7.
    header = read_batch_header(window, 7)._replace(position=1000)
    assert is_crc_valid(window, header, 7)
    assert not is_crc_valid(window, header._replace(crc=header.crc ^ 1), 7)
