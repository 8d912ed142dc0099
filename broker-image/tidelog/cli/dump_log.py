"""``tidelog-dump-log``: print segment files the way Kafka's ``kafka-dump-log.sh`` does.

``.log`` files: one line per batch (and per record with ``--deep-iteration`` or
``--print-data-log``); ``.index`` / ``.timeindex`` files: one line per entry, each entry
checked against the log. Problems are listed on stderr in Kafka's wording after all
files; unlike Kafka, any damage (a bad CRC, invalid trailing bytes, an index entry that
disagrees with the log, a failed sanity check, an unreadable file) makes the exit
status 1, so scripts can rely on it.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

from tidelog.records import (
    CompressionType,
    RecordsError,
    decode_batch,
    decode_control_key,
    decode_end_txn_marker,
    is_crc_valid,
)
from tidelog.records.batch import MAGIC_V2, BatchHeader
from tidelog.storage.errors import StorageError
from tidelog.storage.file_records import FileRecords
from tidelog.storage.offset_index import OffsetIndex
from tidelog.storage.time_index import TimeIndex

__all__ = ["main"]

_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


@dataclass
class Problems:
    """What the checks found, reported after all files like Kafka's tool does."""

    index_mismatches: dict[Path, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[Path, list[tuple[int, int]]] = field(default_factory=dict)
    out_of_order: dict[Path, list[tuple[int, int]]] = field(default_factory=dict)
    offsets_not_found: dict[Path, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[Path, list[tuple[int, int]]] = field(default_factory=dict)
    damaged: bool = False

    def add(self, kind: dict, path: Path, pair: tuple[int, int]) -> None:
        kind.setdefault(path, []).append(pair)
        if kind is not self.non_consecutive:  # gaps are normal in compacted logs
            self.damaged = True

    def report(self, out) -> None:
        for path, pairs in self.index_mismatches.items():
            print(f"Mismatches in :{path}", file=out)
            for index_offset, log_offset in pairs:
                print(f"  Index offset: {index_offset}, log offset: {log_offset}", file=out)
        for path, pairs in self.time_mismatches.items():
            print(f"Found timestamp mismatch in :{path}", file=out)
            for index_ts, log_ts in pairs:
                print(f"  Index timestamp: {index_ts}, log timestamp: {log_ts}", file=out)
        for path, pairs in self.out_of_order.items():
            print(f"Found out of order timestamp in :{path}", file=out)
            for index_ts, previous in pairs:
                print(
                    f"  Index timestamp: {index_ts}, Previously indexed timestamp: {previous}",
                    file=out,
                )
        if self.offsets_not_found:
            print("The following indexed offsets are not found in the log.", file=out)
            for pairs in self.offsets_not_found.values():
                for indexed, found in pairs:
                    print(f"Indexed offset: {indexed}, found log offset: {found}", file=out)
        for path, pairs in self.non_consecutive.items():
            print(f"Non-consecutive offsets in {path}", file=out)
            for before, after in pairs:
                print(f"  {before} is followed by {after}", file=out)


def _base_offset(path: Path) -> int:
    return int(path.name.split(".")[0])


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _batch_line(header: BatchHeader, valid: bool) -> str:
    sequence = header.base_sequence
    last_sequence = header.last_sequence if sequence >= 0 else -1
    horizon = (
        f"OptionalLong[{header.base_timestamp}]"
        if header.attributes & 0x40
        else "OptionalLong.empty"
    )
    return (
        f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
        f"count: {header.records_count} baseSequence: {sequence} lastSequence: {last_sequence} "
        f"producerId: {header.producer_id} producerEpoch: {header.producer_epoch} "
        f"partitionLeaderEpoch: {header.partition_leader_epoch} "
        f"isTransactional: {str(header.is_transactional).lower()} "
        f"isControl: {str(header.is_control).lower()} deleteHorizonMs: {horizon} "
        f"position: {header.position} "
        f"{_TIMESTAMP_TYPES[header.timestamp_type]}: {header.max_timestamp} "
        f"size: {header.size} magic: {header.magic} "
        f"compresscodec: {CompressionType(header.compression).name.lower()} "
        f"crc: {header.crc} isvalid: {str(valid).lower()}"
    )


def _record_line(header: BatchHeader, record, print_data: bool) -> str:
    sequence = -1
    if header.base_sequence >= 0:
        sequence = (header.base_sequence + record.offset - header.base_offset) % (1 << 31)
    line = (
        f"| offset: {record.offset} {_TIMESTAMP_TYPES[header.timestamp_type]}: "
        f"{record.timestamp} keySize: {-1 if record.key is None else len(record.key)} "
        f"valueSize: {-1 if record.value is None else len(record.value)} "
        f"sequence: {sequence} headerKeys: [{','.join(name for name, _ in record.headers)}]"
    )
    if not print_data:
        return line
    if header.is_control:
        control_type = decode_control_key(record.key)
        marker = decode_end_txn_marker(control_type, record.value)
        epoch = marker.coordinator_epoch
        return f"{line} endTxnMarker: {marker.control_type.name} coordinatorEpoch: {epoch}"
    if record.key is not None:
        line += f" key: {_text(record.key)}"
    if record.value is not None:
        line += f" payload: {_text(record.value)}"
    return line


def dump_log(path: Path, deep: bool, print_data: bool, problems: Problems) -> None:
    records = FileRecords(path, create=False, read_only=True)
    try:
        print(f"Log starting offset: {_base_offset(path)}")
        valid_bytes = 0
        last_offset = -1
        for header in records.batch_headers():
            data = records.read(header.position, header.size)
            valid = header.magic == MAGIC_V2 and is_crc_valid(data, header, 0)
            problems.damaged |= not valid
            print(_batch_line(header, valid))
            if deep:
                for record in decode_batch(data, verify_crc=False).records:
                    if last_offset != -1 and record.offset != last_offset + 1:
                        problems.add(problems.non_consecutive, path, (last_offset, record.offset))
                    last_offset = record.offset
                    print(_record_line(header, record, print_data))
            valid_bytes = header.position + header.size
        if valid_bytes < records.size:
            problems.damaged = True
            print(f"Found {records.size - valid_bytes} invalid bytes at the end of {path.name}")
    finally:
        records.close()


def _first_batch_from(records: FileRecords, position: int, offset: int) -> BatchHeader | None:
    return next((h for h in records.batch_headers(position) if h.last_offset >= offset), None)


def dump_offset_index(path: Path, sanity_only: bool, verify_only: bool, problems) -> None:
    base = _base_offset(path)
    index = OffsetIndex(path, base, 0, writable=False)
    records = FileRecords(path.with_suffix(".log"), create=False, read_only=True)
    try:
        if index.entries == 0:
            print(f"{path} is empty.")
            return
        if sanity_only:
            index.sanity_check(records.size)
            print(f"{path} passed sanity check.")
            return
        for slot in range(index.entries):
            entry = index.entry(slot)
            if entry.offset == base and slot > 0:  # zero-filled preallocated tail
                return
            batch = next(records.batch_headers(entry.position), None)
            found = -1 if batch is None else batch.last_offset
            if found != entry.offset:
                problems.add(problems.index_mismatches, path, (entry.offset, found))
            if not verify_only:
                print(f"offset: {entry.offset} position: {entry.position}")
    finally:
        index.close()
        records.close()


def dump_time_index(path: Path, sanity_only: bool, verify_only: bool, problems) -> None:
    base = _base_offset(path)
    time_index = TimeIndex(path, base, 0, writable=False)
    offset_index = OffsetIndex(path.with_suffix(".index"), base, 0, writable=False)
    records = FileRecords(path.with_suffix(".log"), create=False, read_only=True)
    try:
        if sanity_only:
            time_index.sanity_check()
            print(f"{path} passed sanity check.")
            return
        previous = -1
        for slot in range(time_index.entries):
            entry = time_index.entry(slot)
            if entry.offset == base and slot > 0:  # zero-filled preallocated tail
                return
            position = offset_index.lookup(entry.offset).position
            batch = _first_batch_from(records, position, entry.offset)
            if batch is None or batch.last_offset != entry.offset:
                found = -1 if batch is None else batch.last_offset
                problems.add(problems.offsets_not_found, path, (entry.offset, found))
            else:
                if batch.max_timestamp != entry.timestamp:
                    problems.add(
                        problems.time_mismatches, path, (entry.timestamp, batch.max_timestamp)
                    )
                if previous >= entry.timestamp:
                    problems.add(problems.out_of_order, path, (entry.timestamp, previous))
            if not verify_only:
                print(f"timestamp: {entry.timestamp} offset: {entry.offset}")
            previous = entry.timestamp
    finally:
        time_index.close()
        offset_index.close()
        records.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tidelog-dump-log",
        description="Print the batches and records of .log files and the entries of "
        ".index / .timeindex files, checking them (like kafka-dump-log.sh).",
    )
    parser.add_argument("files", nargs="*", type=Path, help="segment files to dump")
    parser.add_argument(
        "--files", dest="file_list", default="", help="comma-separated files (Kafka's spelling)"
    )
    parser.add_argument(
        "--print-data-log",
        action="store_true",
        help="print every record's key and payload (implies --deep-iteration)",
    )
    parser.add_argument(
        "--deep-iteration", action="store_true", help="print every record, not only batches"
    )
    parser.add_argument(
        "--index-sanity-check",
        action="store_true",
        help="only run the sanity check a broker runs when loading an index",
    )
    parser.add_argument(
        "--verify-index-only",
        action="store_true",
        help="check index entries against the log without printing them",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    files = list(args.files) + [Path(f) for f in args.file_list.split(",") if f]
    if not files:
        parser.error("name at least one .log, .index or .timeindex file")
    problems = Problems()
    failed = False
    for path in files:
        print(f"Dumping {path}")
        try:
            if path.name.endswith(".log"):
                deep = args.deep_iteration or args.print_data_log
                dump_log(path, deep, args.print_data_log, problems)
            elif path.name.endswith(".index"):
                dump_offset_index(path, args.index_sanity_check, args.verify_index_only, problems)
            elif path.name.endswith(".timeindex"):
                dump_time_index(path, args.index_sanity_check, args.verify_index_only, problems)
            else:
                print(f"Ignoring unknown file {path}", file=sys.stderr)
                failed = True
        except (OSError, ValueError, RecordsError, StorageError) as error:
            print(f"tidelog-dump-log: {path}: {error}", file=sys.stderr)
            failed = True
    sys.stdout.flush()
    problems.report(sys.stderr)
    return 1 if failed or problems.damaged else 0


if __name__ == "__main__":
    sys.exit(main())
