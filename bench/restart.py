"""S13 of ``make bench``: a broker that holds 1,000 partitions and gigabytes of data is
restarted, tidelog and Apache Kafka alike.

On three brokers, a topic of ``partitions`` partitions with three replicas (every broker
holds every partition) is filled with ``megabytes`` of 1 KiB records (acks=all, spread
round robin), then broker 2 is

1. stopped cleanly (SIGTERM: controlled shutdown, logs flushed, recovery points and a
   clean-shutdown mark written) and started again;
2. after as many megabytes more, killed with SIGKILL (neither system flushes an active
   segment by default, so everything written since the clean restart lies past the
   recovery points and is checked again), and started again once ZooKeeper has expired
   its session.

For each restart two times are taken from the start of the process: until it serves
again (its listener answers a Metadata request that lists it: logs loaded and the broker
registered) and until it is back in the ISR of every partition (caught up with what the
others took meanwhile). Both systems run with their default recovery settings
(Kafka's ``num.recovery.threads.per.data.dir=1``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import loadgen
from bench_waiting import registration_gone, wait_until
from confluent_kafka.admin import AdminClient, NewTopic

__all__ = ["S13_BROKERS", "s13_restart", "settings_line"]

S13_BROKERS = 3
RESTARTED = 2
TOPIC = "s13-restart"


def settings_line(partitions: int, megabytes: int) -> str:
    return (
        f"- S13 (restart): {S13_BROKERS} brokers, a {partitions}-partition RF={S13_BROKERS} "
        f"topic filled with {megabytes:,} MB of 1 KiB records (acks=all); broker {RESTARTED} "
        "stopped cleanly and started, then, after as much data again, killed -9 and started "
        "once its ZooKeeper session expired; times from the process start until it serves (its "
        "listener answers a Metadata request listing it) and until it is in every ISR"
    )


def _when(check: Callable[[], bool], what: str) -> float:
    """The moment (``time.perf_counter``) ``check`` first holds."""
    wait_until(check, f"S13: {what}", timeout=900)
    return time.perf_counter()


def _in_every_isr(session, partitions: int) -> bool:
    found = session.partitions(TOPIC).values()
    return len(found) == partitions and all(RESTARTED in p.isrs for p in found)


def _restart(session, partitions: int) -> tuple[float, float]:
    """Start broker ``RESTARTED``; seconds until it serves, and until it is in every ISR."""
    broker = session.brokers[RESTARTED]
    started = time.perf_counter()
    broker.start(timeout=900)  # returns once its listener accepts connections
    own = AdminClient({"bootstrap.servers": broker.bootstrap})

    def serves() -> bool:
        try:
            return RESTARTED in own.list_topics(timeout=2).brokers
        except Exception:  # not answering yet
            return False

    serving = _when(serves, f"broker {RESTARTED} serving")
    caught_up = _when(lambda: _in_every_isr(session, partitions), "back in every ISR")
    return serving - started, caught_up - started


def _fill(session, partitions: int, megabytes: int) -> None:
    count = megabytes * loadgen.MB // 1024
    loadgen.produce(session.bootstrap, TOPIC, count, 1024, partitions=partitions, acks="all")
    wait_until(lambda: session.fully_replicated(TOPIC, partitions), "the data replicated")


def s13_restart(session, partitions: int, megabytes: int) -> None:
    topic = NewTopic(TOPIC, partitions, S13_BROKERS)
    session.admin.create_topics([topic], operation_timeout=120)[TOPIC].result(300)
    wait_until(lambda: session.fully_replicated(TOPIC, partitions), "topic fully replicated")
    broker = session.brokers[RESTARTED]
    case = f"{partitions} partitions, {megabytes:,} MB"

    _fill(session, partitions, megabytes)
    broker.stop(timeout=300)
    serving, caught_up = _restart(session, partitions)
    session.record("S13", f"{case}, clean stop", "admin", "until serving", serving, "s")
    session.record("S13", f"{case}, clean stop", "admin", "until in every ISR", caught_up, "s")

    _fill(session, partitions, megabytes)
    expired = registration_gone(session.connect, RESTARTED)
    broker.kill()
    expired.wait(f"broker {RESTARTED}'s ZooKeeper session expired")
    serving, caught_up = _restart(session, partitions)
    session.record("S13", f"{case}, kill -9", "admin", "until serving", serving, "s")
    session.record("S13", f"{case}, kill -9", "admin", "until in every ISR", caught_up, "s")
