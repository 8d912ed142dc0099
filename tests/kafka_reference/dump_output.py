"""Parse the text that Apache Kafka's ``kafka.tools.DumpLogSegments`` prints.

The formats (Kafka 3.9), one line each, on stdout::

    Dumping <path>
    Log starting offset: <n>                                    (.log)
    baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1
        producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false
        deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000001 size: 84
        magic: 2 compresscodec: none crc: 226816578 isvalid: true         (one line)
    | offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 2 sequence: -1
        headerKeys: [h1] key: k1 payload: v1                      (deep iteration, one line)
    Found <n> invalid bytes at the end of <name>
    offset: 3 position: 176                                     (.index)
    timestamp: 1700000000003 offset: 3                          (.timeindex)
    <path> is empty.                                            (.index without entries)
    <path> passed sanity check.                                 (--index-sanity-check)

and the problems it found, after all files, on stderr::

    Mismatches in :<path>
      Index offset: <n>, log offset: <n>
    Found timestamp mismatch in :<path>
      Index timestamp: <n>, log timestamp: <n>
    Found out of order timestamp in :<path>
      Index timestamp: <n>, Previously indexed timestamp: <n>
    The following indexed offsets are not found in the log.
    Indexed offset: <n>, found log offset: <n>
    Non-consecutive offsets in <path>
      <n> is followed by <n>
    Ignoring unknown file <path>

Keys and payloads are printed decoded as UTF-8 (Kafka's StringDecoder); a null key or
value prints nothing. A payload may span lines when it holds a newline: the parser joins
lines until the UTF-8 byte length matches the printed ``valueSize``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "DumpOutput",
    "DumpedBatch",
    "DumpedFile",
    "DumpedRecord",
    "parse_dump_output",
]


@dataclass
class DumpedRecord:
    offset: int
    timestamp_type: str  # "CreateTime", "LogAppendTime" or "NoTimestampType"
    timestamp: int
    key_size: int  # -1 for a null key
    value_size: int  # -1 for a null value
    sequence: int | None
    header_keys: list[str]
    key: str | None  # only with print_data_log; None when null (or not printed)
    payload: str | None
    control: str | None = None  # the text after a control record's metadata
    raw: str = ""


@dataclass
class DumpedBatch:
    base_offset: int
    last_offset: int
    count: int | None
    base_sequence: int
    last_sequence: int
    producer_id: int
    producer_epoch: int
    partition_leader_epoch: int
    is_transactional: bool
    is_control: bool
    delete_horizon_ms: int | None
    position: int
    timestamp_type: str
    max_timestamp: int
    size: int
    magic: int
    compresscodec: str
    crc: int
    is_valid: bool
    records: list[DumpedRecord] = field(default_factory=list)
    raw: str = ""


@dataclass
class DumpedFile:
    path: str
    kind: str  # "log", "index", "timeindex" or the file's suffix
    raw: str = ""  # this file's section of stdout, "Dumping ..." line included
    log_starting_offset: int | None = None
    batches: list[DumpedBatch] = field(default_factory=list)
    index_entries: list[tuple[int, int]] = field(default_factory=list)  # (offset, position)
    time_index_entries: list[tuple[int, int]] = field(default_factory=list)  # (timestamp, offset)
    empty: bool = False
    passed_sanity_check: bool = False
    invalid_trailing_bytes: int = 0
    unparsed: list[str] = field(default_factory=list)

    @property
    def records(self) -> list[DumpedRecord]:
        return [r for b in self.batches for r in b.records]


@dataclass
class DumpOutput:
    """Everything one DumpLogSegments run printed, parsed; ``stdout``/``stderr`` are raw."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    files: dict[str, DumpedFile] = field(default_factory=dict)
    # path -> [(index offset, first batch's last offset at that position)]
    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    # path -> [(index timestamp, log max timestamp)]
    time_index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    # path -> [(index timestamp, previously indexed timestamp)]
    out_of_order_timestamps: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    # [(indexed offset, offset found in the log)]; Kafka prints no path for these
    indexed_offsets_not_found: list[tuple[int, int]] = field(default_factory=list)
    # path -> [(offset, next offset)]
    non_consecutive_offsets: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    ignored_files: list[str] = field(default_factory=list)
    # stderr lines that are none of the above (exceptions, log lines)
    errors: list[str] = field(default_factory=list)

    def file(self, path) -> DumpedFile:
        return self.files[str(path)]

    def of_kind(self, kind: str) -> list[DumpedFile]:
        return [f for f in self.files.values() if f.kind == kind]

    @property
    def problems(self) -> list[str]:
        """Every problem Kafka reported, as readable lines; empty when all is well."""
        out: list[str] = []
        if self.returncode != 0:
            out.append(f"exit status {self.returncode}")
        for path, pairs in self.index_mismatches.items():
            out += [f"{path}: index offset {a} but log batch last offset {b}" for a, b in pairs]
        for path, pairs in self.time_index_mismatches.items():
            out += [f"{path}: index timestamp {a} but log timestamp {b}" for a, b in pairs]
        for path, pairs in self.out_of_order_timestamps.items():
            out += [f"{path}: index timestamp {a} after indexed timestamp {b}" for a, b in pairs]
        out += [
            f"indexed offset {a} not found, log has {b}" for a, b in self.indexed_offsets_not_found
        ]
        for path, pairs in self.non_consecutive_offsets.items():
            out += [f"{path}: offset {a} followed by {b}" for a, b in pairs]
        out += [f"ignored unknown file {p}" for p in self.ignored_files]
        for f in self.files.values():
            if f.invalid_trailing_bytes:
                out.append(f"{f.path}: {f.invalid_trailing_bytes} invalid bytes at the end")
            out += [f"{f.path}: invalid batch at {b.position}" for b in f.batches if not b.is_valid]
            if f.kind in ("log", "index", "timeindex"):
                out += [f"{f.path}: unparsed line {line!r}" for line in f.unparsed]
        out += self.errors
        return out

    def assert_clean(self) -> None:
        problems = self.problems
        assert not problems, "DumpLogSegments reported problems:\n" + "\n".join(problems)


_TS_TYPES = "CreateTime|LogAppendTime|NoTimestampType"
_BATCH = re.compile(
    r"baseOffset: (?P<base_offset>-?\d+) lastOffset: (?P<last_offset>-?\d+)"
    r" count: (?P<count>\S+) baseSequence: (?P<base_sequence>-?\d+)"
    r" lastSequence: (?P<last_sequence>-?\d+) producerId: (?P<producer_id>-?\d+)"
    r" producerEpoch: (?P<producer_epoch>-?\d+)"
    r" partitionLeaderEpoch: (?P<partition_leader_epoch>-?\d+)"
    r" isTransactional: (?P<is_transactional>true|false) isControl: (?P<is_control>true|false)"
    r" deleteHorizonMs: (?P<delete_horizon_ms>\S+)"
    rf" position: (?P<position>\d+) (?P<timestamp_type>{_TS_TYPES}): (?P<max_timestamp>-?\d+)"
    r" size: (?P<size>\d+) magic: (?P<magic>\d+) compresscodec: (?P<compresscodec>\S+)"
    r" crc: (?P<crc>\d+) isvalid: (?P<is_valid>true|false)"
)
_RECORD = re.compile(
    rf"\| offset: (?P<offset>-?\d+) (?P<timestamp_type>{_TS_TYPES}): (?P<timestamp>-?\d+)"
    r" keySize: (?P<key_size>-?\d+) valueSize: (?P<value_size>-?\d+)"
    r"(?: sequence: (?P<sequence>-?\d+) headerKeys: \[(?P<header_keys>[^\]]*)\])?"
    r"(?P<rest>.*)",
    re.DOTALL,
)
_INDEX_ENTRY = re.compile(r"offset: (-?\d+) position: (-?\d+)")
_TIME_INDEX_ENTRY = re.compile(r"timestamp: (-?\d+) offset: (-?\d+)")
_LOG_START = re.compile(r"Log starting offset: (-?\d+)")
_TRAILING = re.compile(r"Found (\d+) invalid bytes at the end of (.*)")
_PAIR = re.compile(r"\s*(?:Index offset|Index timestamp|Indexed offset): (-?\d+), [^:]+: (-?\d+)")
_FOLLOWED = re.compile(r"\s*(-?\d+) is followed by (-?\d+)")


def _kind(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    suffix = name[name.rfind(".") + 1 :] if "." in name else ""
    return suffix


def _utf8_len(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _split_key_payload(rest: str, key_size: int, value_size: int):
    """Split `` key: K payload: V`` using the printed sizes to resolve ambiguity.

    Returns (key, payload, control, complete); ``complete`` is False when the payload
    (or key) is shorter than its size, i.e. it continues on the next line.
    """
    key = payload = control = None
    if rest.startswith(" key: ") and key_size >= 0:
        body = rest[len(" key: ") :]
        if value_size >= 0:
            # Prefer the split whose key has exactly key_size UTF-8 bytes.
            candidates = [m.start() for m in re.finditer(re.escape(" payload: "), body)]
            cut = next((c for c in candidates if _utf8_len(body[:c]) == key_size), None)
            if cut is None and candidates:
                cut = candidates[0]
            if cut is None:
                return body, None, None, False
            key, payload = body[:cut], body[cut + len(" payload: ") :]
        else:
            key = body
    elif rest.startswith(" payload: ") and value_size >= 0:
        payload = rest[len(" payload: ") :]
    elif rest:
        control = rest.strip()
    complete = True
    if key is not None and key_size >= 0 and _utf8_len(key) < key_size and payload is None:
        complete = False
    if payload is not None and _utf8_len(payload) < value_size:
        complete = False
    return key, payload, control, complete


def _parse_record(text: str) -> tuple[DumpedRecord | None, bool]:
    m = _RECORD.fullmatch(text)
    if not m:
        return None, True
    key_size, value_size = int(m["key_size"]), int(m["value_size"])
    key, payload, control, complete = _split_key_payload(m["rest"], key_size, value_size)
    header_keys = m["header_keys"]
    record = DumpedRecord(
        offset=int(m["offset"]),
        timestamp_type=m["timestamp_type"],
        timestamp=int(m["timestamp"]),
        key_size=key_size,
        value_size=value_size,
        sequence=None if m["sequence"] is None else int(m["sequence"]),
        header_keys=header_keys.split(",") if header_keys else [],
        key=key,
        payload=payload,
        control=control,
        raw=text,
    )
    return record, complete


def _parse_batch(line: str) -> DumpedBatch | None:
    m = _BATCH.fullmatch(line)
    if not m:
        return None
    horizon = m["delete_horizon_ms"]
    hm = re.fullmatch(r"OptionalLong\[(-?\d+)\]", horizon)
    return DumpedBatch(
        base_offset=int(m["base_offset"]),
        last_offset=int(m["last_offset"]),
        count=None if m["count"] == "null" else int(m["count"]),
        base_sequence=int(m["base_sequence"]),
        last_sequence=int(m["last_sequence"]),
        producer_id=int(m["producer_id"]),
        producer_epoch=int(m["producer_epoch"]),
        partition_leader_epoch=int(m["partition_leader_epoch"]),
        is_transactional=m["is_transactional"] == "true",
        is_control=m["is_control"] == "true",
        delete_horizon_ms=int(hm[1]) if hm else None,
        position=int(m["position"]),
        timestamp_type=m["timestamp_type"],
        max_timestamp=int(m["max_timestamp"]),
        size=int(m["size"]),
        magic=int(m["magic"]),
        compresscodec=m["compresscodec"],
        crc=int(m["crc"]),
        is_valid=m["is_valid"] == "true",
        raw=line,
    )


def _parse_stdout(stdout: str, files: dict[str, DumpedFile]) -> None:
    lines = stdout.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    current: DumpedFile | None = None
    section: list[str] = []
    i = 0

    def finish() -> None:
        if current is not None:
            current.raw = "\n".join(section) + "\n"

    while i < len(lines):
        line = lines[i]
        i += 1
        if line.startswith("Dumping "):
            finish()
            path = line[len("Dumping ") :]
            current = DumpedFile(path=path, kind=_kind(path))
            files[path] = current
            section = [line]
            continue
        section.append(line)
        if current is None:
            continue
        if current.kind in ("log", "checkpoint"):
            if line.startswith("| "):
                text = line
                record, complete = _parse_record(text)
                # A payload with newlines continues on the following lines.
                while record is not None and not complete and i < len(lines):
                    if lines[i].startswith(("Dumping ", "baseOffset: ", "| ")):
                        break
                    text += "\n" + lines[i]
                    section.append(lines[i])
                    i += 1
                    record, complete = _parse_record(text)
                if record is not None and current.batches:
                    current.batches[-1].records.append(record)
                    continue
            elif (batch := _parse_batch(line)) is not None:
                current.batches.append(batch)
                continue
            elif m := _LOG_START.fullmatch(line):
                current.log_starting_offset = int(m[1])
                continue
            elif m := _TRAILING.fullmatch(line):
                current.invalid_trailing_bytes = int(m[1])
                continue
        elif current.kind == "index" and (m := _INDEX_ENTRY.fullmatch(line)):
            current.index_entries.append((int(m[1]), int(m[2])))
            continue
        elif current.kind == "timeindex" and (m := _TIME_INDEX_ENTRY.fullmatch(line)):
            current.time_index_entries.append((int(m[1]), int(m[2])))
            continue
        if line == f"{current.path} is empty.":
            current.empty = True
        elif line == f"{current.path} passed sanity check.":
            current.passed_sanity_check = True
        else:
            current.unparsed.append(line)
    finish()


def _parse_stderr(stderr: str, out: DumpOutput) -> None:
    target: list | None = None
    for line in stderr.splitlines():
        if not line.strip():
            continue
        if line.startswith("Mismatches in :"):
            target = out.index_mismatches.setdefault(line[len("Mismatches in :") :], [])
        elif line.startswith("Found timestamp mismatch in :"):
            path = line[len("Found timestamp mismatch in :") :]
            target = out.time_index_mismatches.setdefault(path, [])
        elif line.startswith("Found out of order timestamp in :"):
            path = line[len("Found out of order timestamp in :") :]
            target = out.out_of_order_timestamps.setdefault(path, [])
        elif line == "The following indexed offsets are not found in the log.":
            target = out.indexed_offsets_not_found
        elif line.startswith("Non-consecutive offsets in "):
            path = line[len("Non-consecutive offsets in ") :]
            target = out.non_consecutive_offsets.setdefault(path, [])
        elif line.startswith("Ignoring unknown file "):
            out.ignored_files.append(line[len("Ignoring unknown file ") :])
            target = None
        elif target is not None and (m := _PAIR.fullmatch(line) or _FOLLOWED.fullmatch(line)):
            target.append((int(m[1]), int(m[2])))
        else:
            target = None
            out.errors.append(line)


def parse_dump_output(args: list[str], returncode: int, stdout: str, stderr: str) -> DumpOutput:
    out = DumpOutput(args=args, returncode=returncode, stdout=stdout, stderr=stderr)
    _parse_stdout(stdout, out.files)
    _parse_stderr(stderr, out)
    return out
