"""Consumer-group load of ``make bench`` (S9, S10), run unchanged against Apache Kafka and
tidelog with confluent-kafka (librdkafka) consumers.

- ``rebalance`` (S9): a group of ``--members`` consumers subscribed to a topic is Stable
  and consuming (a producer thread keeps records coming); one more member subscribes,
  and the time until every member holds its part of the new, balanced assignment is
  measured; then that member closes (LeaveGroup) and the time until the others hold a
  balanced assignment again. ``--repeats`` times, with a new extra member each time;
  the delays before the newcomers subscribe are drawn from ``--seed``.
- ``commit`` (S10): one member of a group that owns every partition of a topic commits
  an offset for each of them in a loop for ``--seconds``: synchronously (one commit
  waits for the previous one's answer) after ``--warmup`` seconds of the same untimed,
  so that a JVM has compiled its commit path (a fresh Kafka broker's rate grows about
  tenfold over its first 20 s of commits); then asynchronously (up to ``--window`` in
  flight) after half of ``--seconds`` untimed. Commits carry the member's generation and
  member id, as a consumer's do.

Each run prints one JSON object on stdout. :func:`run` starts it as a process of its
own, so that neither the harness's threads nor anything else share its interpreter, and
adds librdkafka's warnings and errors (its log on stderr) to the answer.

Why the members of S9 are threads of one process and not processes: on a 2-core machine
that also runs the broker, four or five more interpreters would each need a core to
wake up for every callback and would compete with the broker for it; threads share one
interpreter, but a member's Python work is a poll loop and a callback of microseconds,
while librdkafka's heartbeats, joins and syncs run in its own C threads without the
GIL. One process also gives every member the same clock (``time.perf_counter``).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from phases import spread_over_cycle

# The same client settings for both brokers. A member learns that a rebalance started
# from its next heartbeat's answer, so the heartbeat interval bounds what the clients add
# to S9's times: 100 ms instead of librdkafka's 3 s, so that the coordinator's own work
# shows. But librdkafka sends a due heartbeat only when its main thread wakes up, which an
# idle consumer's does every 100 to 500 ms (measured: gaps of 100, 500, 340, 160, 500 ms
# with heartbeat.interval.ms=100); a statistics timer of 50 ms wakes it often enough for
# heartbeats every 100 ms (measured: 100-105 ms), for about 0.5 % of a core per consumer.
# session.timeout.ms must lie within both brokers' default group.min/max.session.timeout.ms
# (6 s to 30 min).
SESSION_TIMEOUT_MS = 10_000
HEARTBEAT_INTERVAL_MS = 100
WAKE_UP_MS = 50  # statistics.interval.ms; the statistics themselves are dropped
SETTLE_S = 0.3  # quiet time that ends a repeat: any callback in it is one rebalance too many


def group_config(bootstrap: str, group: str, **extra) -> dict:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
        "statistics.interval.ms": WAKE_UP_MS,
        "auto.offset.reset": "earliest",
        **extra,
    }


def percentiles(values: list[float], points=(50, 99)) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    last = len(ordered) - 1
    return {f"p{p:g}": ordered[min(last, round(p / 100 * last))] for p in points}


# --------------------------------------------------------------------------------------
# S9: rebalance time


class Assignments:
    """Who holds which partition, as the members' rebalance callbacks say, and when it
    last changed; ``wait_for`` blocks until a condition on it holds."""

    def __init__(self):
        self.held: dict[int, set[int]] = {}  # member -> partitions
        self.changes = 0
        self.changed_at = 0.0
        self.lost = 0
        self._condition = threading.Condition()

    def change(self, member: int, add=(), remove=(), lost: bool = False) -> None:
        """A callback: a cooperative one may change nothing (an empty incremental
        assignment), and is then not counted."""
        now = time.perf_counter()
        with self._condition:
            held = self.held.setdefault(member, set())
            before = set(held)
            held |= set(add)
            held -= set(remove)
            self.lost += lost
            if held != before:
                self.changes += 1
                self.changed_at = now
                self._condition.notify_all()

    def forget(self, member: int) -> None:
        with self._condition:
            self.held.pop(member, None)

    def balanced(self, members: list[int], partitions: int) -> bool:
        """Every partition held by exactly one of ``members``, each holding its share."""
        parts = [self.held.get(m, set()) for m in members]
        sizes = [len(p) for p in parts]
        union = set().union(*parts)
        return (
            sum(sizes) == partitions == len(union)
            and min(sizes) > 0
            and max(sizes) - min(sizes) <= 1
        )

    def wait_for(self, check: Callable[[], bool], timeout: float) -> float:
        """The moment (perf_counter) of the change after which ``check`` held."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while not check():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no balanced assignment after {timeout} s: {self.held}")
                self._condition.wait(left)
            return self.changed_at

    def quiet(self, seconds: float) -> int:
        """Sleep ``seconds``; the number of changes of assignment meanwhile."""
        before = self.changes
        time.sleep(seconds)
        return self.changes - before


class Member(threading.Thread):
    """One consumer of the group in a poll loop, its callbacks reported to ``held``."""

    def __init__(self, index: int, config: dict, topic: str, held: Assignments, errors: list):
        super().__init__(daemon=True, name=f"member-{index}")
        self.index, self.topic, self.held = index, topic, held
        self.consumer = Consumer(
            config | {"client.id": f"member-{index}", "error_cb": errors.append}
        )
        self.consumed = 0
        self.subscribed_at = self.closing_at = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        self.subscribed_at = time.perf_counter()
        self.consumer.subscribe(
            [self.topic], on_assign=self._assign, on_revoke=self._revoke, on_lost=self._lost
        )
        while not self.stop.is_set():
            message = self.consumer.poll(0.1)
            if message is not None and not message.error():
                self.consumed += 1
        self.closing_at = time.perf_counter()
        self.consumer.close()  # revokes, commits, sends LeaveGroup

    def _assign(self, _consumer, partitions) -> None:
        self.held.change(self.index, add=[p.partition for p in partitions])

    def _revoke(self, _consumer, partitions) -> None:
        self.held.change(self.index, remove=[p.partition for p in partitions])

    def _lost(self, _consumer, partitions) -> None:
        self.held.change(self.index, remove=[p.partition for p in partitions], lost=True)


class Trickle(threading.Thread):
    """Keeps records coming to every partition: 10 records of 100 B every 50 ms."""

    def __init__(self, bootstrap: str, topic: str, partitions: int):
        super().__init__(daemon=True, name="trickle")
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        self.topic, self.partitions = topic, partitions
        self.stop = threading.Event()

    def run(self) -> None:
        sent = 0
        while not self.stop.wait(0.05):
            for _ in range(10):
                self.producer.produce(self.topic, b"x" * 100, partition=sent % self.partitions)
                sent += 1
            self.producer.poll(0)
        self.producer.flush(10)


def rebalance(
    bootstrap: str,
    topic: str,
    partitions: int,
    members: int,
    repeats: int,
    assignor: str,
    seed: int,
) -> dict:
    """S9 for one assignor; times in seconds. A join is mostly the wait for the old
    members' next heartbeats (bench/results/README.md); where in a heartbeat interval
    each newcomer subscribes, and later closes, is spread over the interval from
    ``seed`` (:mod:`phases`), so a run that passes both systems the same seed gives them
    the same starts."""
    config = group_config(
        bootstrap, f"s9-{assignor}", **{"partition.assignment.strategy": assignor}
    )
    held, errors = Assignments(), []
    trickle = Trickle(bootstrap, topic, partitions)
    trickle.start()
    stable = [Member(i, config, topic, held, errors) for i in range(members)]
    formed_from = time.perf_counter()
    for member in stable:
        member.start()
    old = [m.index for m in stable]
    held.wait_for(lambda: held.balanced(old, partitions), 60)
    formed = time.perf_counter() - formed_from
    for _ in range(100):  # until the group's first generations are done with
        if not held.quiet(SETTLE_S):
            break
    joins, leaves, extra = [], [], 0
    draws = random.Random(seed)
    interval = HEARTBEAT_INTERVAL_MS / 1000
    subscribe_delays = spread_over_cycle(draws, repeats, interval)
    close_delays = spread_over_cycle(draws, repeats, interval)
    for repeat in range(repeats):
        index = members + repeat
        newcomer = Member(index, config, topic, held, errors)
        # Its bootstrap connection is up: the time counts from subscribe. Then a part of
        # a heartbeat interval, so that the repeats meet the old members' heartbeats
        # at phases spread over the whole interval.
        time.sleep(0.2 + subscribe_delays[repeat])
        newcomer.start()
        everyone = [*old, index]
        done = held.wait_for(lambda everyone=everyone: held.balanced(everyone, partitions), 60)
        joins.append(done - newcomer.subscribed_at)
        extra += held.quiet(SETTLE_S)
        # The same for its close: after the settle time alone (three heartbeat intervals
        # after the balanced assignment) every close met the old members' heartbeats at
        # nearly one phase, which then decided the leave's figure.
        time.sleep(close_delays[repeat])
        newcomer.stop.set()
        done = held.wait_for(
            lambda left=newcomer: left.closing_at > 0
            and held.changed_at > left.closing_at
            and held.balanced(old, partitions),
            60,
        )
        leaves.append(done - newcomer.closing_at)
        newcomer.join(30)
        held.forget(index)
        extra += held.quiet(SETTLE_S)
    consumed = sum(m.consumed for m in stable)
    for member in stable:
        member.stop.set()
    for member in stable:
        member.join(30)
    trickle.stop.set()
    trickle.join(30)
    return {
        "assignor": assignor,
        "members": members,
        "partitions": partitions,
        "join_s": joins,
        "leave_s": leaves,
        "first_balanced_s": formed,
        "extra_callbacks": extra,
        "lost_callbacks": held.lost,
        "consumed": consumed,
        "errors": [str(e) for e in errors],
    }


# --------------------------------------------------------------------------------------
# S10: commit throughput


class Committer:
    """S10's member: commit ``i`` carries offset ``i`` for every partition (no broker
    checks offsets against the log), so that an answer names its request."""

    def __init__(self, bootstrap: str, topic: str, partitions: int):
        self.topic, self.partitions = topic, partitions
        self.errors: list = []
        self.sent: dict[int, float] = {}  # commit -> perf_counter when sent
        self.latencies: list[float] = []  # ms
        self.next = 1
        self.last_answered = 0
        self.failed = self.out_of_order = 0
        self.sending = False  # async: does an answer send the next commit?
        # on_commit answers asynchronous commits only: a synchronous one returns its answer.
        self.consumer = Consumer(
            group_config(bootstrap, "s10", **{"enable.auto.commit": False})
            | {"on_commit": self._answered, "error_cb": self.errors.append}
        )

    def join(self) -> None:
        """Subscribe, wait until this member owns every partition, and pause them all:
        no fetching, only commits."""
        held = Assignments()
        self.consumer.subscribe(
            [self.topic],
            on_assign=lambda _c, ps: held.change(0, add=[p.partition for p in ps]),
            on_revoke=lambda _c, ps: held.change(0, remove=[p.partition for p in ps]),
        )
        deadline = time.monotonic() + 60
        while not held.balanced([0], self.partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.topic}: not all partitions assigned after 60 s")
            self.consumer.poll(0.1)
        self.consumer.pause(self.consumer.assignment())

    def _offsets(self) -> list[TopicPartition]:
        i, self.next = self.next, self.next + 1
        self.sent[i] = time.perf_counter()
        return [TopicPartition(self.topic, p, i) for p in range(self.partitions)]

    def sync(self, seconds: float) -> tuple[int, float]:
        """Commit after commit for ``seconds``: (commits, seconds they took)."""
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            offsets = self._offsets()
            try:
                done = self.consumer.commit(offsets=offsets, asynchronous=False)
                self.failed += any(p.error for p in done)
            except KafkaException:
                self.failed += 1
            self.latencies.append((time.perf_counter() - self.sent.pop(offsets[0].offset)) * 1000)
        return len(self.latencies), time.perf_counter() - start

    def pipelined(self, seconds: float, window: int) -> tuple[int, float]:
        """Keep ``window`` commits in flight for ``seconds``: (commits answered by then,
        seconds); then wait for the rest of the answers."""
        self.sending = True
        start = time.perf_counter()
        for _ in range(window):
            self.consumer.commit(offsets=self._offsets(), asynchronous=True)
        while time.perf_counter() - start < seconds:
            self.consumer.poll(0.05)  # serves the answers, each sending the next commit
        self.sending = False
        answered, elapsed = len(self.latencies), time.perf_counter() - start
        deadline = time.monotonic() + 30
        while self.sent and time.monotonic() < deadline:
            self.consumer.poll(0.05)
        return answered, elapsed

    def _answered(self, error, done) -> None:
        now = time.perf_counter()
        self.failed += error is not None or any(p.error for p in done)
        i = done[0].offset if done else 0
        started = self.sent.pop(i, None)
        if started is not None:
            self.latencies.append((now - started) * 1000)
        # Answers on one connection come in the order of its requests (the protocol's
        # rule): count any that does not.
        self.out_of_order += i < self.last_answered
        self.last_answered = max(self.last_answered, i)
        if self.sending:
            self.consumer.commit(offsets=self._offsets(), asynchronous=True)


def commit(
    bootstrap: str, topic: str, partitions: int, seconds: float, window: int, warmup: float
) -> dict:
    """S10, synchronous then asynchronous commits by the same member: each mode untimed
    first (synchronous for ``warmup`` seconds, in which a JVM compiles its commit path;
    asynchronous for ``seconds / 2``, which fills the window), then ``seconds`` measured:
    commits/s counts those answered while the clock ran."""
    member = Committer(bootstrap, topic, partitions)
    member.join()
    results = {}
    modes = (
        ("sync", member.sync, warmup),
        ("async", lambda s: member.pipelined(s, window), seconds / 2),
    )
    for mode, run, untimed in modes:
        run(untimed)
        member.latencies.clear()
        failed, out_of_order = member.failed, member.out_of_order
        answered, elapsed = run(seconds)
        results[mode] = {
            "window": window if mode == "async" else 1,
            "partitions": partitions,
            "commits": answered,
            "seconds": elapsed,
            "commits_per_s": answered / elapsed,
            "offsets_per_s": answered * partitions / elapsed,
            "latency_ms": percentiles(member.latencies),
            "failed": member.failed - failed,
            "unanswered": len(member.sent),
            "out_of_order": member.out_of_order - out_of_order,
        }
    member.consumer.close()
    return results | {"errors": [str(e) for e in member.errors]}


# --------------------------------------------------------------------------------------

# librdkafka logs "%<syslog level>|<time>|<facility>|...": 0-4 are warnings and worse.
_WARNING_LEVELS = {f"%{level}|" for level in range(5)}


def run(mode: str, **options) -> dict:
    """Run this file as a process with ``--option value`` for each of ``options``; its
    JSON answer."""
    command = [sys.executable, __file__, mode]
    for name, value in options.items():
        command += [f"--{name.replace('_', '-')}", str(value)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"groupload {mode} failed:\n{done.stdout}\n{done.stderr[-3000:]}")
    warnings = [line for line in done.stderr.splitlines() if line[:3] in _WARNING_LEVELS]
    return json.loads(done.stdout.splitlines()[-1]) | {"client_log": warnings[:20]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["rebalance", "commit"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--assignor", default="range")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--window", type=int, default=16)
    parser.add_argument("--warmup", type=float, default=20)
    args = parser.parse_args()
    if args.mode == "rebalance":
        result = rebalance(
            args.bootstrap,
            args.topic,
            args.partitions,
            args.members,
            args.repeats,
            args.assignor,
            args.seed,
        )
    else:
        result = commit(
            args.bootstrap, args.topic, args.partitions, args.seconds, args.window, args.warmup
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
