"""The cleaner's offset map: key hash → latest offset, in one preallocated buffer.

Kafka's ``SkimpyOffsetMap`` (seed 000: "map 里的每个元素包含了消息键的散列值和消息的偏移量,
键的散列值是 16B,加上偏移量总共是 24B"): an open-addressing hash table whose slots are
24 bytes - the 16-byte MD5 digest of the key, then the offset as a big-endian int64 -
stored back to back in a single ``bytearray`` sized from the memory budget. Keys
themselves are never kept, so the map costs 24 bytes a slot and nothing per key
beyond that: at a load of 0.75 that is 32 bytes a key.

Entries are only ever added or overwritten (seed 001: "只允许增加,不允许删除"); a slot whose
digest is all zeros is empty (an MD5 digest of zero has probability 2**-128).

Probing is double hashing: the low 64 bits of the digest choose the first slot, the
high 64 bits the step. The number of slots is prime, so every step visits every slot,
and the expected probes stay near those of uniform hashing (about 2.6 for a hit and 10
for a miss at a load of 0.9), where linear probing would need 5.5 and 50. Digests are
compared in place with ``bytearray.startswith(digest, position)``: a probe allocates
nothing.
"""

from __future__ import annotations

import hashlib
import struct

from tidelog.storage.cleaner.errors import OffsetMapFullError

__all__ = ["BYTES_PER_ENTRY", "HASH_SIZE", "OffsetMap"]

HASH_SIZE = 16
BYTES_PER_ENTRY = HASH_SIZE + 8
_EMPTY = bytes(HASH_SIZE)
_OFFSET = struct.Struct(">q")
_CLEAR_CHUNK = bytes(1 << 20)


class OffsetMap:
    """A fixed-size map from key (by MD5 digest) to the key's latest offset.

    ``memory`` bytes give ``slots`` = the largest prime ≤ ``memory // 24``; at most
    ``capacity`` = ``slots * load_factor`` keys fit (never every slot, so a miss always
    ends on an empty slot). Putting a new key into a map at capacity raises
    :class:`OffsetMapFullError` and changes nothing; overwriting a key always works.
    """

    __slots__ = ("_buffer", "_capacity", "_latest_offset", "_probes", "_size", "_slots")

    def __init__(self, memory: int, load_factor: float = 0.9, hash_algorithm: str = "MD5"):
        if hash_algorithm.upper() != "MD5":
            raise ValueError(f"unsupported offset map hash algorithm {hash_algorithm!r}")
        if not 0.0 < load_factor <= 1.0:
            raise ValueError(f"load factor must be in (0, 1], got {load_factor}")
        slots = _largest_prime_at_most(memory // BYTES_PER_ENTRY)
        if slots < 2:
            raise ValueError(f"{memory} bytes cannot hold an offset map")
        self._slots = slots
        self._capacity = max(1, min(slots - 1, int(slots * load_factor)))
        self._buffer = bytearray(slots * BYTES_PER_ENTRY)
        self._size = 0
        self._latest_offset = -1
        self._probes = 0

    # -- facts ----------------------------------------------------------------------------

    @property
    def slots(self) -> int:
        return self._slots

    @property
    def size(self) -> int:
        """Keys held."""
        return self._size

    def __len__(self) -> int:
        return self._size

    @property
    def capacity(self) -> int:
        """Most keys the map takes (``slots * load_factor``)."""
        return self._capacity

    @property
    def is_full(self) -> bool:
        return self._size >= self._capacity

    @property
    def utilization(self) -> float:
        """Fraction of the slots in use."""
        return self._size / self._slots

    @property
    def memory(self) -> int:
        """Bytes of the slot buffer (the whole cost of the map)."""
        return len(self._buffer)

    @property
    def bytes_per_key(self) -> float:
        return len(self._buffer) / self._size if self._size else float("inf")

    @property
    def buffer(self) -> bytearray:
        """The slots themselves, for the compiled cleaner passes (``tidelog_native``),
        which read and write them in place with this class's layout and probing."""
        return self._buffer

    @property
    def latest_offset(self) -> int:
        """The offset most recently put (or set by :meth:`update_latest_offset`); -1 if none."""
        return self._latest_offset

    @property
    def extra_probes(self) -> int:
        """Probes past the first slot since the last clear (a collision measure)."""
        return self._probes

    # -- operations ------------------------------------------------------------------------

    def put(self, key: bytes, offset: int) -> None:
        """Record ``offset`` as the latest offset of ``key`` (overwriting an older one)."""
        digest = hashlib.md5(key).digest()
        buffer = self._buffer
        slots = self._slots
        whole = int.from_bytes(digest, "little")
        position = (whole % slots) * BYTES_PER_ENTRY
        if not buffer.startswith(digest, position):
            if buffer.startswith(_EMPTY, position):
                self._add(digest, position)
            else:
                position = self._probe_for_put(digest, whole, position)
        _OFFSET.pack_into(buffer, position + HASH_SIZE, offset)
        self._latest_offset = offset

    def _probe_for_put(self, digest: bytes, whole: int, position: int) -> int:
        buffer = self._buffer
        startswith = buffer.startswith
        slots = self._slots
        end = slots * BYTES_PER_ENTRY
        step = ((whole >> 64) % (slots - 1) + 1) * BYTES_PER_ENTRY
        probes = 0
        while True:
            probes += 1
            position += step
            if position >= end:
                position -= end
            if startswith(digest, position):
                break
            if startswith(_EMPTY, position):
                self._add(digest, position)
                break
        self._probes += probes
        return position

    def _add(self, digest: bytes, position: int) -> None:
        if self._size >= self._capacity:
            raise OffsetMapFullError(
                f"offset map of {self._slots} slots is full at {self._size} keys "
                f"(load factor {self._capacity / self._slots:.2f})"
            )
        self._buffer[position : position + HASH_SIZE] = digest
        self._size += 1

    def get(self, key: bytes) -> int:
        """The latest offset recorded for ``key``, or -1."""
        digest = hashlib.md5(key).digest()
        buffer = self._buffer
        slots = self._slots
        whole = int.from_bytes(digest, "little")
        position = (whole % slots) * BYTES_PER_ENTRY
        if buffer.startswith(digest, position):
            return _OFFSET.unpack_from(buffer, position + HASH_SIZE)[0]
        if buffer.startswith(_EMPTY, position):
            return -1
        startswith = buffer.startswith
        end = slots * BYTES_PER_ENTRY
        step = ((whole >> 64) % (slots - 1) + 1) * BYTES_PER_ENTRY
        while True:
            position += step
            if position >= end:
                position -= end
            if startswith(digest, position):
                return _OFFSET.unpack_from(buffer, position + HASH_SIZE)[0]
            if startswith(_EMPTY, position):
                return -1

    def __contains__(self, key: bytes) -> bool:
        return self.get(key) != -1

    def account_puts(self, size: int, extra_probes: int) -> None:
        """Take note of puts written straight into :attr:`buffer`: the map now holds
        ``size`` keys, and they took ``extra_probes`` probes past their first slot."""
        self._size = size
        self._probes += extra_probes

    def update_latest_offset(self, offset: int) -> None:
        """Move :attr:`latest_offset` (the cleaner maps past batches without keys)."""
        self._latest_offset = offset

    def clear(self) -> None:
        """Empty every slot, keeping the buffer."""
        if self._size:
            view = memoryview(self._buffer)
            chunk = len(_CLEAR_CHUNK)
            for start in range(0, len(view), chunk):
                part = view[start : start + chunk]
                part[:] = _CLEAR_CHUNK[: len(part)]
            view.release()
        self._size = 0
        self._latest_offset = -1
        self._probes = 0

    def __repr__(self) -> str:
        return (
            f"OffsetMap(slots={self._slots}, size={self._size}, "
            f"utilization={self.utilization:.3f}, latest_offset={self._latest_offset})"
        )


def _largest_prime_at_most(n: int) -> int:
    if n < 2:
        return n
    if n == 2:
        return 2
    candidate = n if n % 2 else n - 1
    while candidate > 2 and not _is_prime(candidate):
        candidate -= 2
    return candidate


# Deterministic Miller-Rabin bases for every n < 3.3 * 10**24.
_WITNESSES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)


def _is_prime(n: int) -> bool:
    if n < 2:
        return False
    for p in _WITNESSES:
        if n % p == 0:
            return n == p
    d, r = n - 1, 0
    while d % 2 == 0:
        d //= 2
        r += 1
    for a in _WITNESSES:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True
