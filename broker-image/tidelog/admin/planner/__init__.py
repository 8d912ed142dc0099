"""The reassignment planner: from the current assignment, the brokers with their racks,
the partitions' sizes and an intent, a target assignment that moves as little as it can.

Pure functions, no I/O; ``tidelog-reassign-partitions --generate``, ``tidelog-log-dirs
--drain`` and the operator call them and execute the result (AlterPartitionReassignments,
AlterReplicaLogDirs, preferred-leader elections).

What a plan guarantees, for the partitions it is given:

* **valid**: every partition has its replication factor of distinct brokers, all of them
  among the target brokers (the ones given, minus the ones being removed);
* **rack-diverse where racks allow** (seed 000: 机架感知): when every broker has a rack,
  a partition's replicas span min(replication factor, racks) racks; a move never narrows
  that, and partitions that are narrower are widened first;
* **balanced**: replica counts per target broker differ by at most one, and so do
  preferred-leader counts (the preferred leader is the first replica, seed 000: 首选首领),
  unless racks of unequal sizes make that impossible. Leaderships are even whenever the
  partitions share one replication factor; with mixed factors a group of brokers may
  share too few partitions to lead their share (a single-replica partition leads where
  its replica is), and replicas are then moved to even them as far as single moves
  that keep the replica balance can;
* **minimal**: replicas move only off brokers that leave, off brokers above their share
  and onto brokers below it. The lower bound is max(departures, arrivals): the replicas
  that must leave (those on leaving brokers, plus those above ``ceil(R/B)`` on a staying
  broker) against those that must arrive (below ``floor(R/B)``). Without repairs the
  greedy below meets that bound; each rack repair adds one move, and so does each move
  that evens leaderships pinned by single-replica partitions (the plan counts both).
  Racks of unequal sizes can put a balanced result out of reach, and the bound with
  it: where every partition must keep a replica on a small rack, that rack's brokers
  hold more than their share and the other brokers are evened, in about the fewest
  moves that reach those counts.
  Among the replicas that could go, the smallest partitions go first, so the bytes
  copied are few too. Leadership is rebalanced by reordering replicas (no data moves),
  along the shortest chain of partitions from a broker with too many preferred
  leaderships to one with too few.
* **deterministic**: ties break on broker id, then on (topic, partition).

Kafka's ``--generate`` reassigns every partition from scratch; this planner goes beyond
it on purpose, as the operator needs scale-up and scale-down that copy little.
"""

from tidelog.admin.planner._intents import (
    plan_add_brokers,
    plan_log_dir_drain,
    plan_rebalance_leaders,
    plan_rebalance_replicas,
    plan_remove_brokers,
    plan_replace_replicas,
    plan_replication_factor,
)
from tidelog.admin.planner._model import ClusterState, LogDirMove, Plan, PlanError

__all__ = [
    "ClusterState",
    "LogDirMove",
    "Plan",
    "PlanError",
    "plan_add_brokers",
    "plan_log_dir_drain",
    "plan_rebalance_leaders",
    "plan_rebalance_replicas",
    "plan_remove_brokers",
    "plan_replace_replicas",
    "plan_replication_factor",
]
