"""The ISR changes a broker writes to ZooKeeper itself (seed 003, 004): its leaders'
shrinks and expansions, and at start-up its leaving the ISRs of the partitions it holds
no log of. Each partition state is written conditionally on the version it was read at
(a controller's decision made meanwhile wins), and every write is announced under
``/isr_change_notification`` so the controller sends the brokers the new ISRs.

These sit in ``server/`` although they are replication's: they take the ZooKeeper
client and its data types from ``controller/``, which replication must not import
(DESIGN §1: storage → replication → controller → server). The replica manager calls
:func:`write_isrs` through the ``isr_writer`` it is given.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

from tidelog.controller.election import without_lost_replica
from tidelog.controller.zk_client import KafkaZkClient
from tidelog.controller.zk_data import PartitionState
from tidelog.controller.zk_session import SESSION_ERRORS
from tidelog.replication.replica_manager import ReplicaManager

__all__ = ["ISR_LEAVE_ATTEMPTS", "leave_isrs_of_lost_replicas", "shrink_isrs", "write_isrs"]

logger = logging.getLogger(__name__)

# Rounds of reading and conditionally writing the ISRs this broker leaves at start-up.
ISR_LEAVE_ATTEMPTS = 5


async def write_isrs(
    zk: KafkaZkClient, changes: list[tuple[object, list[int]]]
) -> list[int | None]:
    """Leaders' ISR changes: the partition states in ZooKeeper, each conditional on
    the version it holds, written together, then one /isr_change_notification for
    the controller naming them; each new version, or None where the state changed
    meanwhile (a controller decision wins) or ZooKeeper is away (a later check tries
    again)."""
    states = {
        (p.topic, p.index): PartitionState(
            p.leader, p.leader_epoch, isr, p.controller_epoch, p.zk_version
        )
        for p, isr in changes
    }
    try:
        versions = await asyncio.to_thread(zk.update_partition_states, states)
    except SESSION_ERRORS as error:
        logger.warning("ISRs of %d partitions not written: no ZooKeeper (%r)", len(states), error)
        return [None] * len(changes)
    for key, version in versions.items():
        if version is None:
            logger.info(
                "%s-%d: ISR %s not written: the state changed meanwhile", *key, states[key].isr
            )
    written = [key for key, version in versions.items() if version is not None]
    if written:
        await asyncio.to_thread(zk.announce_isr_changes, written)
    return [versions[(p.topic, p.index)] for p, _ in changes]


async def shrink_isrs(replica_manager: ReplicaManager, lag_time_max_ms: int) -> None:
    """Forever: the ISRs of the partitions this broker leads lose the followers that
    lag more than ``lag_time_max_ms`` (``replica.lag.time.max.ms``); Kafka checks every
    half of it."""
    while True:
        await asyncio.sleep(lag_time_max_ms / 2000)
        try:
            replica_manager.shrink_isrs(lag_time_max_ms)
        except Exception:
            logger.exception("shrinking ISRs failed")


def leave_isrs_of_lost_replicas(
    zk: KafkaZkClient, broker_id: int, hosted: set[tuple[str, int]]
) -> None:
    """Before it registers (so before any controller can elect it): the ISRs that list
    broker ``broker_id`` for a partition it holds no log of (not in ``hosted``) lose it,
    and so does the leadership where it led. Its disks were replaced, the directory
    failed, or it crashed before creating the log: either way it has none of the records
    the ISR vouches for, and elected it would have the other replicas truncate theirs.
    Each state gets a new leader epoch (as the controller's removal of a replica from an
    ISR does: the replicas learn it by LeaderAndIsr), is written conditionally on its
    version, announced under /isr_change_notification like a leader's ISR change, and
    read again on a conflict (blocking: runs in a thread)."""
    for _ in range(ISR_LEAVE_ATTEMPTS):
        lacking = [
            (topic, partition)
            for topic, assignment in zk.topic_assignments(zk.topics()).items()
            for partition, replicas in assignment.partitions.items()
            if broker_id in replicas and (topic, partition) not in hosted
        ]
        proposals = {}
        for key, state in zk.partition_states(lacking).items():
            if broker_id in state.isr:
                leader, isr = without_lost_replica(state.leader, state.isr, broker_id)
                epoch = state.leader_epoch + 1  # the controller tells the replicas
                proposals[key] = replace(state, leader=leader, leader_epoch=epoch, isr=isr)
        if not proposals:
            return
        versions = zk.update_partition_states(proposals)
        written = sorted(key for key, version in versions.items() if version is not None)
        if written:
            logger.warning(
                "broker %d holds no log of %d partitions whose ISR listed it (its disks "
                "were replaced?): it left those ISRs, e.g. %s",
                broker_id,
                len(written),
                [f"{topic}-{partition}" for topic, partition in written[:10]],
            )
            zk.announce_isr_changes(written)
        if len(written) == len(proposals):
            return
    raise RuntimeError(
        f"broker {broker_id} could not leave the ISRs of the partitions it holds "
        f"no log of: their states kept changing ({ISR_LEAVE_ATTEMPTS} attempts)"
    )
