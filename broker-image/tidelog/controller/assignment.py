"""Replica assignment for new topics and partitions (seeds 000 and 004).

Without racks: the first replica of each partition goes round robin over the brokers
from a random start; the followers come at an increasing shift after it, the shift
growing by one each time the partitions wrap around the brokers, so the followers of a
broker's partitions spread over the others. With racks on every broker, the brokers are
first ordered alternating racks (rack a: 0, 1, 2; rack b: 3, 4, 5 → 0, 3, 1, 4, 2, 5)
and a follower is skipped while it would repeat a rack (or broker) that the partition
already uses, until every rack (broker) is used. Same rules as Kafka's AdminUtils.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

__all__ = ["AssignmentError", "assign_replicas", "rack_alternated"]


class AssignmentError(ValueError):
    error_code = 38  # INVALID_REPLICATION_FACTOR


def _replica_index(first: int, shift: int, index: int, brokers: int) -> int:
    return (first + 1 + (shift + index) % (brokers - 1)) % brokers


def rack_alternated(racks: Mapping[int, str]) -> list[int]:
    """Brokers ordered taking one from each rack in turn (racks and ids sorted)."""
    by_rack: dict[str, list[int]] = {}
    for broker, rack in sorted(racks.items()):
        by_rack.setdefault(rack, []).append(broker)
    iterators = [iter(by_rack[rack]) for rack in sorted(by_rack)]
    ordered: list[int] = []
    while len(ordered) < len(racks):
        for iterator in iterators:
            broker = next(iterator, None)
            if broker is not None:
                ordered.append(broker)
    return ordered


def assign_replicas(
    partitions: int,
    replication_factor: int,
    brokers: Sequence[int],
    racks: Mapping[int, str | None] | None = None,
    *,
    start_index: int | None = None,
    replica_shift: int | None = None,
    start_partition: int = 0,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Partition id → replica list (the first replica is the preferred leader).

    ``start_index`` / ``replica_shift`` fix the random choices (tests, reproducible
    plans); ``start_partition`` continues an existing topic (CreatePartitions)."""
    if partitions <= 0:
        raise AssignmentError("the number of partitions must be larger than 0")
    if replication_factor <= 0:
        raise AssignmentError("the replication factor must be larger than 0")
    if replication_factor > len(brokers):
        raise AssignmentError(
            f"replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}"
        )
    rng = rng or random.Random()
    rack_of = {b: (racks or {}).get(b) for b in brokers}
    with_rack = [b for b in brokers if rack_of[b] is not None]
    if with_rack and len(with_rack) != len(brokers):
        raise AssignmentError("not all brokers have rack information for replica assignment")
    ordered = rack_alternated({b: rack_of[b] for b in brokers}) if with_rack else sorted(brokers)
    count = len(ordered)
    start = rng.randrange(count) if start_index is None else start_index
    if replica_shift is None:  # Kafka: a fixed start index fixes the shift too
        replica_shift = rng.randrange(count) if start_index is None else start_index
    shift = replica_shift
    rack_count = len(set(rack_of.values())) if with_rack else 0
    assignment: dict[int, list[int]] = {}
    for partition in range(start_partition, start_partition + partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        first = (partition + start) % count
        replicas = [ordered[first]]
        if not with_rack:
            replicas += [
                ordered[_replica_index(first, shift, j, count)]
                for j in range(replication_factor - 1)
            ]
        else:
            used_racks, k = {rack_of[replicas[0]]}, 0
            while len(replicas) < replication_factor:
                broker = ordered[_replica_index(first, shift * rack_count, k, count)]
                rack = rack_of[broker]
                rack_ok = rack not in used_racks or len(used_racks) == rack_count
                broker_ok = broker not in replicas or len(replicas) == count
                if rack_ok and broker_ok:
                    replicas.append(broker)
                    used_racks.add(rack)
                k += 1
        assignment[partition] = replicas
    return assignment
