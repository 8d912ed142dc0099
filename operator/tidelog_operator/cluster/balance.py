"""How even a Cluster's leaders and replicas are, and when a balancing is asked for
(seed 000: 首选首领, the first replica is the preferred leader; seed 003: C
Preferred领导者选举). Pure.

* A preferred-leader election runs every ``spec.rebalance.leaders.intervalSeconds``
  (0: never on a schedule) and when the Cluster is annotated
  ``tidelog.dev/rebalance=leaders``.
* A replica rebalance through the planner runs when it is annotated
  ``tidelog.dev/rebalance=replicas``.

The annotation is removed once its request is carried out, or at once when its value is
neither (with a Warning event). Imbalance is the spread
(most minus fewest) of leaders, or replicas, over the live brokers.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "REBALANCE_ANNOTATION",
    "REQUESTS",
    "election_due",
    "requested",
    "spread",
    "unknown_request",
]

REBALANCE_ANNOTATION = "tidelog.dev/rebalance"
REQUESTS = ("leaders", "replicas")

TopicPartition = tuple[str, int]


def requested(annotations: Mapping[str, str] | None) -> str | None:
    """The balancing the annotation asks for (None: none, or a value it does not know)."""
    value = (annotations or {}).get(REBALANCE_ANNOTATION)
    return value if value in REQUESTS else None


def unknown_request(annotations: Mapping[str, str] | None) -> str | None:
    """The annotation's value when it asks for no balancing known (it is then removed,
    with a Warning event)."""
    value = (annotations or {}).get(REBALANCE_ANNOTATION)
    return value if value is not None and value not in REQUESTS else None


def election_due(last: str | None, interval_s: int, now: datetime.datetime) -> bool:
    """Whether a scheduled election is due: never with interval 0, else when none ran
    yet or the last (an RFC 3339 time) is ``interval_s`` old."""
    if interval_s <= 0:
        return False
    if not last:
        return True
    ran = datetime.datetime.strptime(last, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    return (now - ran).total_seconds() >= interval_s


def spread(per_broker: Iterable[int], brokers: Iterable[int]) -> int:
    """Most minus fewest of ``per_broker`` (one broker id per leadership or replica) over
    ``brokers``; a broker with none counts 0."""
    counts = dict.fromkeys(brokers, 0)
    for broker in per_broker:
        if broker in counts:
            counts[broker] += 1
    return max(counts.values(), default=0) - min(counts.values(), default=0)


def replicas_of(assignment: Mapping[TopicPartition, Sequence[int]]) -> list[int]:
    return [broker for replicas in assignment.values() for broker in replicas]
