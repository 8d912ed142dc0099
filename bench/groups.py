"""S9 and S10 of ``make bench``, on one broker: consumer groups through
``bench/groupload.py`` (a process of its own). S9 times rebalances as a member joins a
Stable group and leaves it, with the eager and the cooperative assignor; S10 times
offset commits, synchronous and with several in flight.

Each scenario takes a started :class:`session.Session` and records its figures there;
what the clients saw go wrong is printed as a warning beside them.
"""

from __future__ import annotations

import statistics

import groupload
from session import Session, warn
from settings import Scale

__all__ = [
    "S9_ASSIGNORS",
    "S9_MEMBERS",
    "S9_PARTITIONS",
    "S10_PARTITIONS",
    "S10_WINDOW",
    "s9_rebalance",
    "s10_commits",
]

S9_MEMBERS = 3  # the Stable group that a 4th member joins
S9_PARTITIONS = 12
S9_ASSIGNORS = ("range", "cooperative-sticky")  # librdkafka's eager default, incremental
S10_PARTITIONS = 12  # offsets per commit
S10_WINDOW = 16  # asynchronous commits in flight


def s9_rebalance(session: Session, scale: Scale, rank: int) -> None:
    """A Stable group of 3 consuming members, a 4th subscribes: the time until all 4 hold
    their part of the balanced assignment (for the eager assignor, the time during which
    the group consumes nothing), then until the 3 hold it again after the 4th leaves.
    ``rank`` as for :func:`run_session`: the kth session of each system meets the old
    members' heartbeats at the same phases (``groupload.rebalance``)."""
    repeats = {"range": scale.s9_repeats, "cooperative-sticky": scale.s9_cooperative_repeats}
    for assignor in S9_ASSIGNORS:
        topic = f"s9-{assignor}"
        session.create_topic(topic, S9_PARTITIONS)
        result = groupload.run(
            "rebalance",
            bootstrap=session.bootstrap,
            topic=topic,
            partitions=S9_PARTITIONS,
            members=S9_MEMBERS,
            repeats=repeats[assignor],
            assignor=assignor,
            seed=rank,
        )
        case = f"{S9_MEMBERS}→{S9_MEMBERS + 1} members, {S9_PARTITIONS}p, {assignor}"
        joins = [s * 1000 for s in result["join_s"]]
        leaves = [s * 1000 for s in result["leave_s"]]
        raw = {
            k: result[k]
            for k in (
                "first_balanced_s",
                "extra_callbacks",
                "lost_callbacks",
                "consumed",
                "errors",
                "client_log",
            )
        }
        session.record(
            "S9", case, "groupload", "join median", statistics.median(joins), "ms", samples=joins
        )
        session.record("S9", case, "groupload", "join max", max(joins), "ms")
        session.record(
            "S9",
            case,
            "groupload",
            "leave median",
            statistics.median(leaves),
            "ms",
            samples=leaves,
            **raw,
        )
        if any(raw[k] for k in ("extra_callbacks", "lost_callbacks", "errors", "client_log")):
            warn(session, f"S9 {assignor}", raw)


def s10_commits(session: Session, scale: Scale) -> None:
    """One member of a group, owning all 12 partitions of a topic, commits an offset for
    each in a loop: synchronously (after ``s10_warmup_seconds`` of the same untimed),
    then with up to 16 commits in flight."""
    topic = "s10-commits"
    session.create_topic(topic, S10_PARTITIONS)
    results = groupload.run(
        "commit",
        bootstrap=session.bootstrap,
        topic=topic,
        partitions=S10_PARTITIONS,
        seconds=scale.s10_seconds,
        window=S10_WINDOW,
        warmup=scale.s10_warmup_seconds,
    )
    for mode, label in (("sync", "sync"), ("async", f"async ≤{S10_WINDOW} in flight")):
        result = results[mode]
        case = f"{S10_PARTITIONS} offsets/commit, {label}"
        raw = {k: result[k] for k in ("commits", "seconds", "failed", "unanswered", "out_of_order")}
        raw |= {k: results[k] for k in ("errors", "client_log")}  # of the process: both modes
        session.record(
            "S10", case, "groupload", "commits", result["commits_per_s"], "commits/s", **raw
        )
        session.record(
            "S10", case, "groupload", "offsets committed", result["offsets_per_s"], "offsets/s"
        )
        for p, value in result["latency_ms"].items():
            session.record("S10", case, "groupload", f"commit {p}", value, "ms")
        if any(raw[k] for k in ("failed", "unanswered", "out_of_order", "errors", "client_log")):
            warn(session, f"S10 {mode}", raw)
