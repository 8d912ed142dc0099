"""The offset resets of ``tidelog-consumer-groups``: reading the ``--to-datetime``,
``--by-duration`` and ``--from-file`` values, and computing the new offset of each
partition as Kafka's ``kafka-consumer-groups.sh`` does. Pure (the offsets come in as
arguments), but for :func:`plan_reset`, which asks an admin client for them."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tidelog.admin.groups import TopicPartition

__all__ = [
    "SCENARIOS",
    "ResetError",
    "ResetPlan",
    "ResetSpec",
    "parse_datetime",
    "parse_duration",
    "parse_reset_file",
    "plan_reset",
    "reset_targets",
]

# The reset scenarios, in the order Kafka's usage lists them.
SCENARIOS = (
    "to_datetime",
    "by_duration",
    "to_earliest",
    "to_latest",
    "shift_by",
    "from_file",
    "to_current",
    "to_offset",
)


class ResetError(Exception):
    """A partition's new offset cannot be computed (an offset it needs is missing)."""


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration(text: str) -> int:
    """An ISO-8601 duration as Java's ``Duration.parse`` reads it (``PnDTnHnMn.nS``, days
    of 24 hours, signs allowed), in nanoseconds; ValueError otherwise."""
    match = _DURATION.fullmatch(text.strip())
    if (
        match is None
        or match.group(3) == "T"
        or not any(match.group(i) is not None for i in (2, 4, 5, 6))
    ):
        raise ValueError(f"Invalid duration {text!r}: expected PnDTnHnMnS, e.g. PT30M or P1DT2H")
    sign, days, _, hours, minutes, seconds, fraction = match.groups()
    total = 0
    for value, unit in ((days, 86400), (hours, 3600), (minutes, 60), (seconds, 1)):
        if value is not None:
            total += int(value) * unit * 10**9
    if fraction:
        nanos = int(fraction.ljust(9, "0"))
        total += -nanos if seconds.startswith("-") else nanos
    return -total if sign == "-" else total


_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})" r"(Z|[+-]\d{2}(?::?\d{2})?)?"
)


def parse_datetime(text: str) -> int:
    """``YYYY-MM-DDTHH:mm:SS.sss`` with an optional zone (``Z``, ``+HH``, ``+HHmm``,
    ``+HH:mm``; UTC without one), as Kafka's tool reads ``--to-datetime``: epoch ms."""
    match = _DATETIME.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"Error parsing timestamp {text!r}: expected YYYY-MM-DDTHH:mm:SS.sss with an "
            "optional zone (Z, +HH, +HHmm or +HH:mm)"
        )
    *fields, millis, zone = match.groups()
    offset = dt.timedelta(0)
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:] or 0)
        if hours > 23 or minutes > 59:
            raise ValueError(f"Error parsing timestamp {text!r}: bad zone offset {zone}")
        offset = dt.timedelta(hours=hours, minutes=minutes) * (-1 if zone[0] == "-" else 1)
    try:
        moment = dt.datetime(*map(int, fields), int(millis) * 1000, dt.timezone(offset))
    except ValueError as error:
        raise ValueError(f"Error parsing timestamp {text!r}: {error}") from None
    return round(moment.timestamp() * 1000)


def parse_reset_file(text: str, groups: Sequence[str]) -> dict[str, dict[TopicPartition, int]]:
    """A ``--from-file`` plan: ``topic,partition,offset`` lines for the one group given,
    or ``group,topic,partition,offset``; ValueError on a bad line."""
    plans: dict[str, dict[TopicPartition, int]] = {}
    for number, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if not row or not "".join(row).strip():
            continue
        try:
            if len(row) == 3 and len(groups) == 1:
                group, (topic, partition, offset) = groups[0], row
            elif len(row) == 4:
                group, topic, partition, offset = row
            else:
                raise ValueError
            plans.setdefault(group, {})[TopicPartition(topic, int(partition))] = int(offset)
        except ValueError:
            raise ValueError(
                f"line {number} of the reset plan: expected "
                + ("topic,partition,offset or " if len(groups) == 1 else "")
                + "group,topic,partition,offset"
            ) from None
    return plans


@dataclass(frozen=True)
class ResetSpec:
    """One reset scenario. ``value``: the offset (to-offset), the shift (shift-by), epoch
    ms (to-datetime) or nanoseconds (by-duration)."""

    scenario: str  # a name of SCENARIOS
    value: int | None = None

    @property
    def by_time(self) -> bool:
        return self.scenario in ("to_datetime", "by_duration")

    def timestamp(self, now_ns: int | None = None) -> int:
        """The epoch ms to look offsets up at (to-datetime, by-duration)."""
        if self.scenario == "to_datetime":
            return self.value
        now_ns = time.time_ns() if now_ns is None else now_ns
        return (now_ns - self.value) // 1_000_000


@dataclass
class ResetPlan:
    offsets: dict[TopicPartition, int]
    warnings: list[str] = field(default_factory=list)


def _clamp(
    requested: Mapping[TopicPartition, int],
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    warnings: list[str],
) -> dict[TopicPartition, int]:
    out = {}
    for tp, offset in requested.items():
        if tp not in latest or tp not in earliest:
            raise ResetError(f"Unexpected non-existing offset value for topic partition {tp}")
        if offset > latest[tp]:
            warnings.append(
                f"New offset ({offset}) is higher than latest offset for topic partition "
                f"{tp}. Value will be set to {latest[tp]}"
            )
            offset = latest[tp]
        elif offset < earliest[tp]:
            warnings.append(
                f"New offset ({offset}) is lower than earliest offset for topic partition "
                f"{tp}. Value will be set to {earliest[tp]}"
            )
            offset = earliest[tp]
        out[tp] = offset
    return out


def reset_targets(
    spec: ResetSpec,
    partitions: Iterable[TopicPartition],
    *,
    committed: Mapping[TopicPartition, int],
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    by_time: Mapping[TopicPartition, int] | None = None,
    from_file: Mapping[TopicPartition, int] | None = None,
) -> ResetPlan:
    """The new offset of each partition, as Kafka's tool computes it: to-offset, shift-by
    and from-file are clamped into [earliest, latest] (with a warning each);
    to-current falls back to the latest offset without a committed one; to-datetime and
    by-duration (``by_time``: the ListOffsets answers, -1 for none) fall back to the
    latest offset when no record is that recent. ResetError when an offset is missing.
    """
    partitions = sorted(set(partitions))
    warnings: list[str] = []

    def need(offsets: Mapping[TopicPartition, int], tp: TopicPartition, what: str) -> int:
        if tp not in offsets:
            raise ResetError(f"Error getting {what} offset of topic partition: {tp}")
        return offsets[tp]

    s = spec.scenario
    if s == "to_offset":
        out = _clamp({tp: spec.value for tp in partitions}, earliest, latest, warnings)
    elif s == "shift_by":
        requested = {}
        for tp in partitions:
            if tp not in committed:
                raise ResetError(
                    f"Cannot shift offset for partition {tp} since there is no current "
                    "committed offset"
                )
            requested[tp] = committed[tp] + spec.value
        out = _clamp(requested, earliest, latest, warnings)
    elif s == "to_earliest":
        out = {tp: need(earliest, tp, "starting") for tp in partitions}
    elif s == "to_latest":
        out = {tp: need(latest, tp, "ending") for tp in partitions}
    elif s == "to_current":
        out = {
            tp: committed[tp] if tp in committed else need(latest, tp, "ending")
            for tp in partitions
        }
    elif spec.by_time:
        out = {}
        for tp in partitions:
            offset = need(by_time or {}, tp, "by timestamp")
            if offset < 0:
                warnings.append(
                    f"Partition {tp.partition} from topic {tp.topic} is empty. "
                    "Falling back to latest known offset."
                )
                offset = need(latest, tp, "ending")
            out[tp] = offset
    elif s == "from_file":
        requested = {tp: (from_file or {})[tp] for tp in partitions}
        out = _clamp(requested, earliest, latest, warnings)
    else:
        raise ValueError(f"unknown reset scenario {s!r}")
    return ResetPlan(dict(sorted(out.items())), warnings)


def plan_reset(
    admin,
    spec: ResetSpec,
    partitions: Iterable[TopicPartition],
    committed: Mapping[TopicPartition, int],
    from_file: Mapping[TopicPartition, int] | None = None,
) -> ResetPlan:
    """:func:`reset_targets` with the earliest, latest and (for the time scenarios)
    by-timestamp offsets of ``partitions`` from ``admin`` (ListOffsets)."""
    partitions = sorted(set(partitions))
    if not partitions:
        return ResetPlan({})
    earliest = {tp: o.offset for tp, o in admin.list_offsets(partitions, "earliest").items()}
    latest = {tp: o.offset for tp, o in admin.list_offsets(partitions, "latest").items()}
    by_time = None
    if spec.by_time:
        by_time = {
            tp: o.offset for tp, o in admin.list_offsets(partitions, spec.timestamp()).items()
        }
    return reset_targets(
        spec,
        partitions,
        committed=committed,
        earliest=earliest,
        latest=latest,
        by_time=by_time,
        from_file=from_file,
    )
