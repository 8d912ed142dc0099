"""Consumer groups on a three-broker cluster, with real client libraries in processes of
their own (:mod:`integration.group_member`), so that a member can be SIGKILLed.

* membership — each library: three members share a six-partition topic, one partition
  to exactly one member; a killed member is evicted when its session ends and its
  partitions move; a member that closes leaves at once; committed offsets carry every
  record across those changes;
* static membership — a member restarted with the same ``group.instance.id`` within its
  session gets its partitions back without a rebalance;
* coordinator failover — the coordinator broker SIGKILLed: the group carries on with the
  new coordinator, which has every committed offset;
* the offsets topic compacts, and a coordinator reloads the latest offsets from the
  compacted log.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, TopicPartition

from integration.clients import RawClient
from integration.cluster import Cluster
from tidelog.coordinator.group_coordinator import OFFSETS_TOPIC, partition_for
from tidelog.coordinator.offsets_records import OffsetKey, UnknownRecordKey, decode_key
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until

# Rebalances without the initial three-second wait, and sessions as short as a second.
FAST_GROUPS = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1000"}
PARTITIONS = 6
LIBRARIES = ("kafka-python", "confluent", "aiokafka")
TESTS_DIR = Path(__file__).resolve().parents[1]

# A client-log line about the member's place in the group (kafka-python's and aiokafka's
# coordinator loggers, librdkafka's CGRP facility); heartbeats and metadata refreshes
# (which count the coordinators they know) aside.
MEMBERSHIP_LINE = re.compile(r"join|sync|leave|coordinator|rebalanc|CGRP", re.IGNORECASE)
ROUTINE_LINE = re.compile(r"heartbeat|Updated metadata", re.IGNORECASE)
# A gdb backtrace line ("#3  0x00007f... in rd_kafka_x () from ...", or without the address),
# a thread's header line ('Thread 2 (Thread 0x7f... (LWP 18086) "rdk:main"):'), and the
# glibc functions of a thread blocked on a mutex or a read-write lock.
STACK_FRAME = re.compile(r"#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(")
THREAD_NAME = re.compile(r'"([^"]*)"\):$')
LOCK_WAITS = (
    "lll_lock_wait",
    "pthread_mutex_lock",
    "pthread_rwlock_wrlock",
    "pthread_rwlock_rdlock",
)
# A frame of py-spy's dump of a thread's Python stack: "    commit (kafka/consumer/group.py:678)".
PY_FRAME = re.compile(r"^\s+(\S+) \((\S+:\d+)\)$")
PY_SPY = Path(sys.executable).with_name("py-spy")  # a test tool, beside the interpreter

# Pinned request versions (tidelog.protocol encodes and decodes them).
FIND_COORDINATOR_V = 3
DESCRIBE_GROUPS_V = 5
OFFSET_FETCH_V = 7
OFFSET_COMMIT_V = 8


# -- the group as the coordinator sees it ------------------------------------------------------


def find_coordinator(cluster: Cluster, group: str) -> int | None:
    """The coordinator's broker id, as the first running broker that answers names it."""
    for broker_id in cluster.running:
        try:
            with cluster.connect(broker_id) as connection:
                found = connection.request(
                    ApiKey.FIND_COORDINATOR, FIND_COORDINATOR_V, {"key": group, "key_type": 0}
                )
        except OSError:
            continue
        return found.node_id if found.error_code == ErrorCode.NONE else None
    return None


def coordinator(cluster: Cluster, group: str) -> int:
    return wait_until(lambda: find_coordinator(cluster, group), f"{group} has a coordinator")


def offsets_at_the_next_coordinator(
    cluster: Cluster, group: str, gone: int, topic: str, partitions: int
) -> dict[int, int]:
    """Once a running broker other than ``gone`` coordinates the group (the leader of its
    offsets partition moved), what it answers to OffsetFetch for the topic's partitions."""
    successor = wait_until(
        lambda: (c := find_coordinator(cluster, group)) != gone and c, "another coordinator"
    )
    assert successor in cluster.running
    return wait_until(
        lambda: committed(cluster, group, topic, range(partitions)),
        f"the next coordinator, {successor}, answers OffsetFetch",
    )


def assigned_partitions(assignment: bytes, topic: str) -> list[int]:
    """The partitions of ``topic`` in a ConsumerProtocolAssignment: int16 version, then
    an int32 count of (int16-length topic name, int32 count of int32 partitions)."""
    if not assignment:
        return []
    (count,) = struct.unpack_from(">i", assignment, 2)
    position, found = 6, []
    for _ in range(count):
        (length,) = struct.unpack_from(">h", assignment, position)
        name = assignment[position + 2 : position + 2 + length].decode()
        position += 2 + length
        (size,) = struct.unpack_from(">i", assignment, position)
        partitions = struct.unpack_from(f">{size}i", assignment, position + 4)
        position += 4 + 4 * size
        if name == topic:
            found += partitions
    return sorted(found)


@dataclass(frozen=True)
class DescribedMember:
    member_id: str
    client_id: str
    instance_id: str | None
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class DescribedGroup:
    state: str
    members: tuple[DescribedMember, ...]

    def by_client(self) -> dict[str, tuple[int, ...]]:
        return {m.client_id: m.partitions for m in self.members}


def describe(cluster: Cluster, group: str, topic: str) -> DescribedGroup | None:
    """DescribeGroups at the group's coordinator (None while there is none)."""
    broker_id = find_coordinator(cluster, group)
    if broker_id is None:
        return None
    with cluster.connect(broker_id) as connection:
        body = {"groups": [group], "include_authorized_operations": False}
        (found,) = connection.request(ApiKey.DESCRIBE_GROUPS, DESCRIBE_GROUPS_V, body).groups
    if found.error_code != ErrorCode.NONE:
        return None
    members = tuple(
        DescribedMember(
            m.member_id,
            m.client_id,
            m.group_instance_id,
            tuple(assigned_partitions(m.member_assignment, topic)),
        )
        for m in found.members
    )
    return DescribedGroup(found.group_state, members)


def committed(
    cluster: Cluster, group: str, topic: str, partitions: Iterable[int]
) -> dict[int, int] | None:
    """OffsetFetch at the coordinator: partition → committed offset (-1: none); None
    while the coordinator is not there or still loading."""
    broker_id = find_coordinator(cluster, group)
    if broker_id is None:
        return None
    body = {
        "group_id": group,
        "topics": [{"name": topic, "partition_indexes": list(partitions)}],
        "require_stable": False,
    }
    with cluster.connect(broker_id) as connection:
        response = connection.request(ApiKey.OFFSET_FETCH, OFFSET_FETCH_V, body)
    if response.error_code != ErrorCode.NONE:
        return None
    (found,) = response.topics
    assert all(p.error_code == ErrorCode.NONE for p in found.partitions), found
    return {p.partition_index: p.committed_offset for p in found.partitions}


def offset_commit_body(group: str, topic: str, offsets: dict[int, int]) -> dict:
    """An OffsetCommit outside any generation (-1), as admin tools and assigned
    consumers send it."""
    partitions = [
        {"partition_index": p, "committed_offset": o, "committed_metadata": ""}
        for p, o in offsets.items()
    ]
    return {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": topic, "partitions": partitions}],
    }


def commit(cluster: Cluster, group: str, topic: str, offsets: dict[int, int]) -> None:
    broker_id = coordinator(cluster, group)
    with cluster.connect(broker_id) as connection:
        response = connection.request(
            ApiKey.OFFSET_COMMIT, OFFSET_COMMIT_V, offset_commit_body(group, topic, offsets)
        )
    codes = [p.error_code for t in response.topics for p in t.partitions]
    assert codes == [ErrorCode.NONE] * len(offsets), codes


def end_offsets(cluster: Cluster, topic: str, partitions: int) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=cluster.running_bootstrap, group_id=None)
    try:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
    finally:
        consumer.close()
    return {tp.partition: offset for tp, offset in ends.items()}


def generations(cluster: Cluster, group: str) -> list[int]:
    """Every generation the brokers' logs report for ``group``, in order of appearance."""
    pattern = re.compile(rf"group {re.escape(group)}: generation (\d+) ")
    return [int(n) for b in cluster.brokers.values() for n in pattern.findall(b.log())]


def warm_up(cluster: Cluster) -> None:
    """Create the offsets topic and wait until every broker knows a leader for each of
    its partitions, so that the first group of a test finds its coordinator at once."""
    coordinator(cluster, "warm-up")

    def everywhere() -> bool:
        for broker_id in cluster.running:
            leaders = cluster.leaders(broker_id, OFFSETS_TOPIC)
            if len(leaders) != 50 or any(leader < 0 for leader, _, _ in leaders.values()):
                return False
        return True

    wait_until(everywhere, "every broker knows the leaders of the offsets topic")


# -- members and producers --------------------------------------------------------------------


@dataclass
class Member:
    """A ``group_member`` process and what it printed so far."""

    name: str
    process: subprocess.Popen
    stderr_path: Path
    assigned: tuple[int, ...] | None = None
    assignments: list[tuple[int, ...]] = field(default_factory=list)  # every one, in order
    member_id: str | None = None
    generation: int | None = None
    batches: list[list[tuple[int, int, str]]] = field(default_factory=list)
    failed_commits: list[int] = field(default_factory=list)  # indexes into batches
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def read(self) -> None:
        for line in self.process.stdout:
            event = json.loads(line)
            with self.lock:
                if "assigned" in event:
                    self.assigned = tuple(event["assigned"])
                    self.assignments.append(self.assigned)
                    self.member_id = event["member_id"]
                    self.generation = event["generation"]
                elif "records" in event:
                    self.batches.append([tuple(r) for r in event["records"]])
                elif "commit_error" in event:
                    self.failed_commits.append(len(self.batches) - 1)
                elif event.get("closed"):
                    self.closed = True

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def records(self) -> list[tuple[int, int, str]]:
        with self.lock:
            return [r for batch in self.batches for r in batch]

    def uncommitted(self) -> list[tuple[int, int, str]]:
        """Records printed whose commit failed, and — once the process was killed — its
        last batch, which it may not have committed: those may come again."""
        with self.lock:
            indexes = set(self.failed_commits)
            if self.process.returncode == -signal.SIGKILL and self.batches:
                indexes.add(len(self.batches) - 1)
            return [r for i in sorted(indexes) for r in self.batches[i]]

    def kill(self) -> None:
        if self.alive:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def close(self) -> None:
        """SIGTERM: the member closes its consumer and exits."""
        self.process.send_signal(signal.SIGTERM)

    def wait_closed(self) -> None:
        code = self.process.wait(30)
        assert code == 0 and self.closed, f"{self.name} exited with {code}: {self.stderr()}"

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")[-3000:]

    def membership_log(self, limit: int = 20) -> str:
        """The last ``limit`` lines of the whole client log about joining, syncing and
        leaving the group: for a member that went quiet, what it did last as a member,
        which the end of its log (metadata refreshes) no longer shows."""
        lines = self.stderr_path.read_text(errors="replace").splitlines()
        wanted = [
            line for line in lines if MEMBERSHIP_LINE.search(line) and not ROUTINE_LINE.search(line)
        ]
        return "\n".join(wanted[-limit:])


@pytest.fixture
def spawn(tmp_path):
    """Start group members; every one still running at the end is killed."""
    started: list[Member] = []
    paths = [str(TESTS_DIR), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}

    def start(
        lib: str,
        cluster: Cluster,
        topic: str,
        group: str,
        name: str,
        *,
        session_timeout_ms: int,
        instance_id: str = "",
    ) -> Member:
        stderr_path = tmp_path / f"{group}-{name}-{len(started)}.stderr"
        command = [
            sys.executable,
            "-m",
            "integration.group_member",
            f"--lib={lib}",
            f"--bootstrap={cluster.running_bootstrap}",
            f"--topic={topic}",
            f"--group={group}",
            f"--client-id={name}",
            f"--instance-id={instance_id}",
            f"--session-timeout-ms={session_timeout_ms}",
        ]
        with open(stderr_path, "wb") as stderr:
            process = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=stderr, env=env, text=True
            )
        member = Member(name, process, stderr_path)
        started.append(member)
        threading.Thread(target=member.read, daemon=True).start()
        return member

    yield start
    for member in started:
        member.kill()


class SteadyProducer:
    """Records ``<tag>-<n>`` to partition n % 6, six every 50 ms, from a thread of its own
    until stopped; ``stop`` returns every value the brokers acknowledged."""

    def __init__(self, cluster: Cluster, topic: str, tag: str):
        self.producer = Producer(
            {"bootstrap.servers": cluster.running_bootstrap, "acks": "all", "linger.ms": 5}
        )
        self.topic, self.tag = topic, tag
        self.acknowledged: list[str] = []
        self.failures: list = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _delivered(self, error, message) -> None:
        if error is not None:
            self.failures.append(error)
        else:
            self.acknowledged.append(message.value().decode())

    def _run(self) -> None:
        n = 0
        while not self._stop.wait(0.05):
            for _ in range(PARTITIONS):
                value = f"{self.tag}-{n}"
                self.producer.produce(
                    self.topic,
                    value.encode(),
                    partition=n % PARTITIONS,
                    on_delivery=self._delivered,
                )
                n += 1
            self.producer.poll(0)

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join()
        assert self.producer.flush(60) == 0, "records left unacknowledged"
        assert not self.failures, self.failures[:3]
        return list(self.acknowledged)


def produce(cluster: Cluster, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": cluster.running_bootstrap, "acks": "all"})
    failures = []
    for n, value in enumerate(values):
        producer.produce(
            topic,
            value.encode(),
            partition=n % PARTITIONS,
            on_delivery=lambda e, _m: e and failures.append(e),
        )
    assert producer.flush(60) == 0, "records left unacknowledged"
    assert not failures, failures[:3]


def owners(members: Iterable[Member]) -> dict[str, tuple[int, ...]] | None:
    """Each member's own view of its partitions, when the views split the topic's
    partitions between them, each member some; else None."""
    views = {m.name: m.assigned for m in members}
    if any(not partitions for partitions in views.values()):
        return None
    every = sorted(p for partitions in views.values() for p in partitions)
    return views if every == list(range(PARTITIONS)) else None


def settled(
    cluster: Cluster, group: str, topic: str, members: list[Member]
) -> dict[str, tuple[int, ...]]:
    """The members' views and the coordinator's DescribeGroups agree: a Stable group of
    exactly these members, every partition owned by exactly one of them (else an
    AssertionError saying what differs, for ``wait_until`` to report)."""
    views = owners(members)
    described = describe(cluster, group, topic)
    agree = (
        views is not None
        and described is not None
        and described.state == "Stable"
        and len(described.members) == len(views)
        and described.by_client() == views
    )
    assert agree, f"members see {[(m.name, m.assigned) for m in members]}; coordinator: {described}"
    return views


@contextlib.contextmanager
def member_logs_on_failure(members: list[Member]):
    """A failed wait shows each member's last group-membership lines and the end of its
    client log (its stderr) and, for a member still running, which of its threads wait
    for a lock and where its main thread is."""
    try:
        yield
    except AssertionError as error:
        logs = "\n".join(
            f"--- {m.name}: {threads_waiting_for_locks(m)}\n"
            f"main thread: {main_thread_calls(m)}\n"
            f"membership:\n{m.membership_log()}\nend of log:\n{m.stderr()[-1500:]}"
            for m in members
        )
        raise AssertionError(f"{error}\n{logs}") from None


def threads_waiting_for_locks(member: Member) -> str:
    """The native stacks of a running member, from gdb, are saved beside its log; returned
    is each thread blocked on a lock, with the client-library function it is in. A client
    that stopped talking to the brokers without a word in its log may be deadlocked."""
    if not member.alive:
        return f"exited with {member.process.returncode}"
    if shutil.which("gdb") is None:
        return "running (no gdb here to show its threads)"
    command = ["gdb", "-p", str(member.process.pid), "-batch", "-ex", "thread apply all bt"]
    dump = subprocess.run(command, capture_output=True, text=True, timeout=60).stdout
    member.stderr_path.with_suffix(".stacks").write_text(dump)
    waiting = []
    for thread in dump.split("\nThread ")[1:]:
        header, *frames = thread.splitlines()
        functions = [m.group(1) for m in map(STACK_FRAME.match, frames) if m]
        if any(wait in f for f in functions[:5] for wait in LOCK_WAITS):
            name = THREAD_NAME.search(header)
            library = next((f for f in functions if f.startswith("rd_kafka")), functions[-1])
            waiting.append(f"{name.group(1) if name else header} waits in {library}")
    return "; ".join(waiting) or "running, no thread waits for a lock"


def main_thread_calls(member: Member, depth: int = 4) -> str:
    """The innermost calls of a running member's main thread, outside Python's threading
    module, from py-spy (every thread's Python stack is saved beside its log): a client
    call that never returns shows here, also when no thread waits for a lock."""
    if not member.alive:
        return "-"
    if not PY_SPY.exists():
        return "(no py-spy here to show it)"
    command = [str(PY_SPY), "dump", "--pid", str(member.process.pid)]
    dump = subprocess.run(command, capture_output=True, text=True, timeout=60)
    member.stderr_path.with_suffix(".pystacks").write_text(dump.stdout + dump.stderr)
    threads = dump.stdout.split("\nThread ")[1:]
    main = next((t for t in threads if t.splitlines()[0].endswith('"MainThread"')), "")
    frames = [PY_FRAME.match(line) for line in main.splitlines()[1:]]
    calls = [f"{f[1]} ({f[2]})" for f in frames if f and not f[2].startswith("threading.py")]
    return " < ".join(calls[:depth]) or dump.stderr.strip() or "no Python stack"


def all_consumed(produced: list[str], members: Iterable[Member]) -> bool:
    """Every produced value was printed by some member (AssertionError naming the
    missing ones, for ``wait_until`` to report)."""
    values = {value for m in members for _, _, value in m.records()}
    missing = [v for v in produced if v not in values]
    assert not missing, f"{len(missing)} records not consumed, e.g. {missing[:5]}"
    return True


def assert_each_record_once_but_the_uncommitted(produced: list[str], members: list[Member]) -> None:
    """Every produced record was consumed; one more than once only where a member
    printed it but did not commit it (killed right after, or its commit failed)."""
    all_consumed(produced, members)
    consumed = [r for m in members for r in m.records()]
    may_repeat = {r for m in members for r in m.uncommitted()}
    repeated = [r for r, n in Counter(consumed).items() if n > 1 and r not in may_repeat]
    assert not repeated, f"consumed twice although committed: {repeated[:5]}"


# -- clusters ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def groups_cluster(tmp_path_factory, module_chroot):
    """Three brokers shared by the membership tests (each uses topics and groups of its
    own), with the offsets topic created."""
    with Cluster(tmp_path_factory.mktemp("groups"), module_chroot, overrides=FAST_GROUPS) as c:
        warm_up(c)
        yield c


# -- membership ----------------------------------------------------------------------------------


@pytest.mark.parametrize("lib", LIBRARIES)
def test_members_share_partitions_and_leave_or_are_evicted(groups_cluster, spawn, lib):
    cluster = groups_cluster
    topic, group = f"membership-{lib}", f"membership-{lib}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    # Members start at the committed offsets, and where there is none at the end: an
    # offset lost between owners would skip records.
    commit(cluster, group, topic, dict.fromkeys(range(PARTITIONS), 0))
    producer = SteadyProducer(cluster, topic, lib)
    try:
        # The member to be killed has a session of 6 s (Kafka's least by default): short
        # enough to wait for, long enough for a busy machine's heartbeats. The others have
        # 30 s, so that a leave that waited for the session could not pass for one at once.
        doomed = spawn(lib, cluster, topic, group, "doomed", session_timeout_ms=6000)
        leaving = spawn(lib, cluster, topic, group, "leaving", session_timeout_ms=30000)
        staying = spawn(lib, cluster, topic, group, "staying", session_timeout_ms=30000)
        members = [doomed, leaving, staying]

        with member_logs_on_failure(members):
            views = wait_until(
                lambda: settled(cluster, group, topic, members), "three members share the topic"
            )
        assert sorted(len(p) for p in views.values()) == [2, 2, 2], views
        wait_until(lambda: all(m.records() for m in members), "every member consumed")

        # SIGKILL: nobody tells the coordinator; the member's session ends.
        doomed_id = doomed.member_id
        doomed.kill()
        wait_until(
            lambda: settled(cluster, group, topic, [leaving, staying]),
            "the killed member's partitions moved to the others",
        )
        evicted = f"member {doomed_id} sent no heartbeat"
        assert any(evicted in b.log() for b in cluster.brokers.values()), evicted

        # A closing member sends LeaveGroup: the rebalance does not wait for its session
        # (30 s, longer than this wait), and the coordinator says why it rebalanced.
        leaving_id = leaving.member_id
        leaving.close()
        wait_until(
            lambda: settled(cluster, group, topic, [staying]),
            "the last member owns every partition",
            timeout=20,
        )
        left = f"({leaving_id} left)"
        assert any(left in b.log() for b in cluster.brokers.values()), left
        leaving.wait_closed()
    finally:
        produced = producer.stop()

    wait_until(lambda: all_consumed(produced, members), "every produced record consumed")
    ends = end_offsets(cluster, topic, PARTITIONS)
    assert sum(ends.values()) == len(produced)
    wait_until(
        lambda: committed(cluster, group, topic, range(PARTITIONS)) == ends,
        "the last member committed everything",
    )
    assert_each_record_once_but_the_uncommitted(produced, members)
    staying.close()
    staying.wait_closed()


# -- static membership ---------------------------------------------------------------------------


@pytest.mark.parametrize("lib", ["confluent", "aiokafka"])
def test_a_static_member_restarted_within_its_session_gets_its_partitions_back(
    groups_cluster, spawn, lib
):
    """Killed and started again, or closed (a static member sends no LeaveGroup) and
    started again, with the same group instance id: the same partitions, no rebalance."""
    cluster = groups_cluster
    topic, group = f"static-{lib}", f"static-{lib}"
    cluster.create_topic(topic, partitions=PARTITIONS, replication_factor=3)
    commit(cluster, group, topic, dict.fromkeys(range(PARTITIONS), 0))

    def start(name: str) -> Member:
        return spawn(
            lib,
            cluster,
            topic,
            group,
            name,
            instance_id=f"{name}-instance",
            session_timeout_ms=20000,
        )

    producer = SteadyProducer(cluster, topic, lib)
    try:
        members = {name: start(name) for name in ("killed", "closed", "bystander")}
        views = wait_until(
            lambda: settled(cluster, group, topic, list(members.values())),
            "three static members share the topic",
        )
        wait_until(lambda: all(m.records() for m in members.values()), "every member consumed")
        before = describe(cluster, group, topic)
        seen = generations(cluster, group)
        assert seen, "the brokers' logs name no generation of the group"
        bystander_assignments = len(members["bystander"].assignments)

        members["killed"].kill()
        members["killed-again"] = start("killed")
        members["closed"].close()
        members["closed"].wait_closed()
        members["closed-again"] = start("closed")
        current = [members[n] for n in ("killed-again", "closed-again", "bystander")]
        wait_until(
            lambda: settled(cluster, group, topic, current) == views,
            "the restarted members own their partitions again",
        )
        wait_until(
            lambda: members["killed-again"].records() and members["closed-again"].records(),
            "the restarted members consume",
        )
    finally:
        produced = producer.stop()

    after = describe(cluster, group, topic)
    assert after.state == "Stable"
    assert {m.instance_id: m.partitions for m in after.members} == {
        m.instance_id: m.partitions for m in before.members
    }
    # New member ids for the new processes, the same for the one that stayed.
    assert sorted(m.client_id for m in after.members) == sorted(views)
    old_ids = {m.client_id: m.member_id for m in before.members}
    new_ids = {m.client_id: m.member_id for m in after.members}
    assert new_ids["bystander"] == old_ids["bystander"]
    assert new_ids["killed"] != old_ids["killed"] and new_ids["closed"] != old_ids["closed"]
    # No rebalance: no generation after the one the members started in, and the member
    # that stayed was never told of another assignment.
    assert generations(cluster, group) == seen, generations(cluster, group)
    assert len(members["bystander"].assignments) == bystander_assignments
    if lib == "aiokafka":  # the library tells its generation
        assert {m.generation for m in current} == {max(seen)}

    wait_until(lambda: all_consumed(produced, members.values()), "every produced record consumed")
    for member in current:
        member.close()
    for member in current:
        member.wait_closed()


# -- coordinator failover ------------------------------------------------------------------------


def started_cluster(tmp_path: Path, zk_chroot: str, overrides: dict[str, str] | None = None):
    """Three brokers of a test's own (it kills or restarts one), with the offsets topic
    created."""
    cluster = Cluster(
        tmp_path / "cluster", zk_chroot, overrides={**FAST_GROUPS, **(overrides or {})}
    )
    with cluster:
        warm_up(cluster)
        yield cluster


@pytest.fixture
def fresh_cluster(tmp_path, zk_chroot):
    yield from started_cluster(tmp_path, zk_chroot)


def test_the_group_carries_on_when_its_coordinator_is_killed(fresh_cluster, spawn):
    cluster = fresh_cluster
    topic, group = "failover", "failover"
    # The coordinator is only a follower of the topic's partitions: what is killed is the
    # group's coordinator, not a leader the members fetch from. librdkafka can deadlock
    # when a broker that leads a member's partitions drops out of the metadata
    # (confluentinc/librdkafka issue 5476); a member stuck that way would fail this test
    # for a reason that is not the coordinator's.
    killed = coordinator(cluster, group)
    leaders = [b for b in cluster.running if b != killed]
    assignment = {p: [leaders[p % 2], leaders[(p + 1) % 2], killed] for p in range(PARTITIONS)}
    cluster.create_topic(topic, assignment=assignment)
    commit(cluster, group, topic, dict.fromkeys(range(PARTITIONS), 0))
    members = [
        spawn("confluent", cluster, topic, group, name, session_timeout_ms=10000)
        for name in ("first", "second", "third")
    ]
    with member_logs_on_failure(members):
        wait_until(lambda: settled(cluster, group, topic, members), "three members share the topic")
        produced = [f"before-{n}" for n in range(300)]
        produce(cluster, topic, produced)
        ends = end_offsets(cluster, topic, PARTITIONS)
        wait_until(
            lambda: committed(cluster, group, topic, range(PARTITIONS)) == ends,
            "the members committed every record",
        )

        assert find_coordinator(cluster, group) == killed
        cluster.brokers[killed].kill()
        # Once the killed broker's ZooKeeper session ends, the controller elects another
        # leader for the group's offsets partition, which loads the group from its replica.
        assert offsets_at_the_next_coordinator(cluster, group, killed, topic, PARTITIONS) == ends

        more = [f"after-{n}" for n in range(300)]
        produce(cluster, topic, more)
        produced += more
        wait_until(
            lambda: all_consumed(produced, members),
            "the members consumed what was produced after the failover",
        )
        wait_until(
            lambda: committed(cluster, group, topic, range(PARTITIONS))
            == end_offsets(cluster, topic, PARTITIONS),
            "the members committed at the new coordinator",
        )
        wait_until(
            lambda: settled(cluster, group, topic, members), "the group is Stable with all three"
        )
    assert_each_record_once_but_the_uncommitted(produced, members)


# -- the offsets topic compacts -------------------------------------------------------------------

COMMITS = 2000
COMMITTED_PARTITIONS = 3


@pytest.fixture
def compacting_cluster(tmp_path, zk_chroot):
    """Offsets-topic segments of 16 KiB, and a cleaner that looks for work every 100 ms."""
    overrides = {"offsets.topic.segment.bytes": "16384", "log.cleaner.backoff.ms": "100"}
    yield from started_cluster(tmp_path, zk_chroot, overrides)


def commit_many(cluster: Cluster, group: str, topic: str, commits: list[dict[int, int]]) -> None:
    """Each commit its own OffsetCommit request: all but the last from four connections
    at once, each sending a window of requests before reading their answers; then the
    last, so that it is the latest."""
    port = cluster.brokers[coordinator(cluster, group)].port
    failures: list = []

    def send(share: list[dict[int, int]]) -> None:
        try:
            with RawClient(port) as client:
                for start in range(0, len(share), 50):
                    sent = [
                        client.send(
                            ApiKey.OFFSET_COMMIT,
                            OFFSET_COMMIT_V,
                            offset_commit_body(group, topic, offsets),
                        )
                        for offsets in share[start : start + 50]
                    ]
                    for correlation_id in sent:
                        response = client.receive(
                            ApiKey.OFFSET_COMMIT, OFFSET_COMMIT_V, correlation_id
                        )
                        failures.extend(
                            p.error_code
                            for t in response.topics
                            for p in t.partitions
                            if p.error_code != ErrorCode.NONE
                        )
        except Exception as error:  # reported below, in the test's thread
            failures.append(error)

    threads = [threading.Thread(target=send, args=(commits[i:-1:4],)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[:5]
    send(commits[-1:])
    assert not failures, failures[:5]


def offset_records(cluster: Cluster, group: str) -> tuple[int, int]:
    """How many records of ``group``'s committed offsets its ``__consumer_offsets``
    partition holds, read from the beginning by a consumer without a group; and the
    partition's end offset."""
    partition = TopicPartition(OFFSETS_TOPIC, partition_for(group, 50))
    consumer = KafkaConsumer(bootstrap_servers=cluster.running_bootstrap, group_id=None)
    try:
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        end = consumer.end_offsets([partition])[partition]
        keys = []

        def read_to_end() -> bool:
            keys.extend(m.key for m in consumer.poll(timeout_ms=500).get(partition, []))
            return consumer.position(partition) >= end

        wait_until(read_to_end, f"{partition} read up to {end}", interval=0)
        count = 0
        for raw in keys:
            try:
                key = decode_key(raw)
            except UnknownRecordKey:
                continue
            count += isinstance(key, OffsetKey) and key.group == group
    finally:
        consumer.close()
    return count, end


def elect_preferred_leader(cluster: Cluster, partition: int) -> int:
    """ElectLeaders (preferred) for one offsets partition, at the controller: its error."""
    body = {
        "election_type": 0,
        "topic_partitions": [{"topic": OFFSETS_TOPIC, "partitions": [partition]}],
        "timeout_ms": 10000,
    }
    with cluster.connect(cluster.controller_id()) as connection:
        response = connection.request(ApiKey.ELECT_LEADERS, None, body)
    ((result,),) = [r.partition_result for r in response.replica_election_results]
    return result.error_code


def test_the_offsets_topic_compacts_and_reloads_the_latest_offsets(compacting_cluster):
    cluster = compacting_cluster
    topic, group = "compacted-source", "compacted"
    cluster.create_topic(topic, partitions=COMMITTED_PARTITIONS, replication_factor=3)
    commits = [{p: 1000 * p + n for p in range(COMMITTED_PARTITIONS)} for n in range(COMMITS)]
    commit_many(cluster, group, topic, commits)
    latest = commits[-1]
    written = COMMITS * COMMITTED_PARTITIONS

    # The cleaner keeps the latest record of each key in the cleaned segments; the
    # active segment (16 KiB, well under 10% of what was written) is left alone.
    left, end = wait_until(
        lambda: (found := offset_records(cluster, group))[0] < written // 10 and found,
        "the group's offsets partition is compacted",
    )
    assert end >= written and left >= COMMITTED_PARTITIONS, (end, left)
    assert committed(cluster, group, topic, range(COMMITTED_PARTITIONS)) == latest

    # The coordinator restarts: another replica's broker takes the group over, then the
    # restarted broker, its preferred leader, takes it back and replays its own log.
    first = coordinator(cluster, group)
    partition = partition_for(group, 50)
    assert cluster.assignment(OFFSETS_TOPIC)[partition][0] == first
    assert cluster.brokers[first].stop() == 0
    fetched = offsets_at_the_next_coordinator(cluster, group, first, topic, COMMITTED_PARTITIONS)
    assert fetched == latest
    cluster.brokers[first].start()
    wait_until(cluster.all_known, "every broker knows the restarted one")
    wait_until(
        lambda: elect_preferred_leader(cluster, partition) == ErrorCode.ELECTION_NOT_NEEDED,
        "the restarted broker leads the group's offsets partition again",
    )
    assert coordinator(cluster, group) == first
    fetched = wait_until(
        lambda: committed(cluster, group, topic, range(COMMITTED_PARTITIONS)),
        "the restarted coordinator answers OffsetFetch",
    )
    assert fetched == latest
    assert offset_records(cluster, group)[0] < written // 10
