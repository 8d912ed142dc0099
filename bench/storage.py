"""Storage engine benchmarks, each reported against a reference measured in the same run.

* append: 1 KiB records in 16 KiB and 1 MiB batches through ``Log.append_as_leader``
  (validation, offset assignment, index maintenance) vs plain ``os.write`` of the same
  bytes to a file in the same directory; neither fsyncs.
* read by offset: p50 / p99 latency of ``Log.read`` (locate + slice) at random offsets,
  and of reading the slice's bytes.
* compaction: MB/s of one cleaning of a log with many duplicate keys, with the compiled
  record passes and with the pure-Python ones; and the pure-Python floor: the seconds per
  million records of the least per-record work a pure-Python cleaner does in its two
  passes (per pass: the key sliced out at a known position, its MD5 digest, one slot of
  the map compared), which bounds from below what pure Python can reach.
* offset map: bytes per key at a 0.75 load factor.

Usage: ``python bench/storage.py [--megabytes N] [--dir DIR]``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from tidelog.records import build_batch
from tidelog.storage.cleaner import OffsetMap, clean_log, record_passes
from tidelog.storage.config import LogConfig
from tidelog.storage.log import Log

RECORD_SIZE = 1024


def make_batch(records: int) -> bytes:
    value = os.urandom(RECORD_SIZE)
    return build_batch([(None, value)] * records, timestamp=int(time.time() * 1000))


def _timed_plain_write(path: Path, data: bytes, count: int) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    start = time.perf_counter()
    for _ in range(count):
        os.write(fd, data)
    elapsed = time.perf_counter() - start
    os.close(fd)
    path.unlink()
    return elapsed


def _timed_log_append(directory: Path, data: bytes, count: int) -> float:
    # a 1 MiB batch is above the 1 MiB + 12 default of max.message.bytes
    log = Log.open(directory, LogConfig(max_message_bytes=2 << 20))
    start = time.perf_counter()
    for _ in range(count):
        log.append_as_leader(data)
    elapsed = time.perf_counter() - start
    log.delete()
    return elapsed


def bench_append(directory: Path, batch_records: int, megabytes: int, rounds: int = 5) -> dict:
    """Alternates the two writers, each round starting with no dirty pages (sync), and
    keeps the median of each so writeback of one run does not land on the other."""
    data = make_batch(batch_records)
    count = max(1, megabytes * 1024 * 1024 // len(data))
    plain, appended = [], []
    for _ in range(rounds):
        os.sync()
        plain.append(_timed_plain_write(directory / "reference.bin", data, count))
        os.sync()
        appended.append(_timed_log_append(directory / "bench-0", data, count))
    total_mb = count * len(data) / 1e6
    plain_s, appended_s = statistics.median(plain), statistics.median(appended)
    return {
        "batch_bytes": len(data),
        "batches": count,
        "log_mb_s": total_mb / appended_s,
        "write_mb_s": total_mb / plain_s,
        "ratio": plain_s / appended_s,
    }


def bench_read(directory: Path, samples: int = 5000) -> dict:
    config = LogConfig(segment_bytes=64 * 1024 * 1024)
    log = Log.open(directory / "read-0", config)
    data = make_batch(16)
    for _ in range(16 * 1024):  # ~256 MiB over four segments
        log.append_as_leader(data)
    rng = random.Random(7)
    locate, fetch = [], []
    for _ in range(samples):
        offset = rng.randrange(log.log_end_offset)
        start = time.perf_counter()
        found = log.read(offset, 64 * 1024)
        middle = time.perf_counter()
        found.records.to_bytes()
        end = time.perf_counter()
        locate.append(middle - start)
        fetch.append(end - start)
    log.close()

    def percentile(values, q):
        return statistics.quantiles(values, n=1000)[int(q * 10) - 1] * 1e6

    return {
        "segments": len(log.segments),
        "locate_p50_us": percentile(locate, 50),
        "locate_p99_us": percentile(locate, 99),
        "read_64k_p50_us": percentile(fetch, 50),
        "read_64k_p99_us": percentile(fetch, 99),
    }


def bench_compaction(
    directory: Path, passes: record_passes.RecordPasses, records: int = 200_000, keys: int = 20_000
) -> dict:
    """One cleaning of ``records`` 100-byte records over ``keys`` keys (10 values per key)."""
    config = LogConfig(segment_bytes=8 * 1024 * 1024, cleanup_policy=("compact",))
    log = Log.open(directory / "compact-0", config)
    rng = random.Random(11)
    per_batch = 100
    for _ in range(records // per_batch):
        entries = [
            (f"key-{rng.randrange(keys):08d}", os.urandom(42).hex()) for _ in range(per_batch)
        ]
        log.append_as_leader(build_batch(entries, timestamp=1))
    log.roll()
    size_before = log.size
    _, stats = clean_log(log, now_ms=int(time.time() * 1000), passes=passes)
    size_after = log.size
    log.delete()
    return {
        "mb_before": size_before / 1e6,
        "mb_after": size_after / 1e6,
        "mb_per_s": stats.bytes_read / 1e6 / stats.elapsed_secs,
        "map_mb_per_s": stats.map_bytes_read / 1e6 / stats.map_elapsed_secs,
        "records_per_s": stats.messages_read / stats.elapsed_secs,
    }


def bench_python_floor(records: int = 1_000_000, keys: int = 200_000) -> float:
    """Seconds per million records of the least that a pure-Python cleaner does per record
    in each of its two passes: slice the key out of the records (its position already
    known: no parsing), take its MD5 digest and compare the map's slot for it (no
    probing, no write). The real passes do all of that and more."""
    record = 100
    data = b"".join(b"%13d" % (i % keys) + bytes(record - 13) for i in range(records))
    offset_map = OffsetMap(24 * 2 * keys)
    buffer, slots = offset_map.buffer, offset_map.slots
    md5 = hashlib.md5
    start = time.perf_counter()
    for _ in range(2):
        for position in range(0, len(data), record):
            digest = md5(data[position : position + 13]).digest()
            buffer.startswith(digest, int.from_bytes(digest, "little") % slots * 24)
    return (time.perf_counter() - start) / records * 1e6


def bench_offset_map(keys: int = 1_000_000, load_factor: float = 0.75) -> dict:
    """Memory per key of a map holding ``keys`` keys at ``load_factor``."""
    offset_map = OffsetMap(int(keys / load_factor * 24), load_factor=load_factor)
    start = time.perf_counter()
    for offset in range(offset_map.capacity):
        offset_map.put(b"key-%d" % offset, offset)
    elapsed = time.perf_counter() - start
    return {
        "keys": offset_map.size,
        "bytes_per_key": offset_map.bytes_per_key,
        "puts_per_s": offset_map.size / elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--megabytes", type=int, default=128, help="data appended per case and round"
    )
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where to write (default: a "
        "temporary directory under the repository, i.e. the project's disk)",
    )
    args = parser.parse_args()
    base = args.dir or Path(__file__).resolve().parent.parent / ".bench-work"
    base.mkdir(parents=True, exist_ok=True)
    directory = Path(tempfile.mkdtemp(dir=base))
    try:
        print(f"writing under {directory}")
        for batch_records in (16, 1024):
            result = bench_append(directory, batch_records, args.megabytes)
            print(
                f"append {result['batch_bytes'] / 1024:.0f} KiB batches: "
                f"log {result['log_mb_s']:.0f} MB/s, os.write {result['write_mb_s']:.0f} MB/s, "
                f"ratio {result['ratio']:.2f}"
            )
        for passes in (record_passes.NATIVE, record_passes.PYTHON):
            if passes is None:
                print("compaction, compiled: tidelog_native is not installed (make native)")
                continue
            result = bench_compaction(directory, passes)
            print(
                f"compaction, {passes.name}: {result['mb_before']:.1f} MB -> "
                f"{result['mb_after']:.1f} MB at {result['mb_per_s']:.1f} MB/s "
                f"({result['records_per_s']:.0f} records/s; "
                f"building the map {result['map_mb_per_s']:.1f} MB/s)"
            )
        print(
            "compaction, pure-Python floor (per record and pass: key slice, MD5, one slot): "
            f"{bench_python_floor():.2f} s per million records"
        )
        result = bench_offset_map()
        print(
            f"offset map: {result['bytes_per_key']:.2f} bytes per key at 0.75 load "
            f"({result['keys']} keys, {result['puts_per_s']:.0f} puts/s)"
        )
        result = bench_read(directory)
        print(
            f"read by offset ({result['segments']} segments): locate p50 "
            f"{result['locate_p50_us']:.1f} us, p99 {result['locate_p99_us']:.1f} us; "
            f"locate + 64 KiB read p50 {result['read_64k_p50_us']:.1f} us, "
            f"p99 {result['read_64k_p99_us']:.1f} us"
        )
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
