"""Apache Kafka's own perf tools and Java client, run by ``make bench`` against both
systems: ``kafka-producer-perf-test`` (``ProducerPerformance``), ``kafka-consumer-perf-test``
(``ConsumerPerformance``, the Java consumer: it keeps incremental fetch sessions) and
S8's Java paced producer (``PacedProducer.java``)."""

from __future__ import annotations

import re
import subprocess
import threading
from pathlib import Path

import loadgen
from kafka_broker import kafka_libs

from tidelog.zookeeper import find_java

__all__ = ["PERF_TEST_JVM", "JavaPacedProducer", "consumer_perf_test", "producer_perf_test"]

PERF_TEST_JVM = ("-Xmx256M", "-XX:+UseG1GC", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn")
_PRODUCER_LINE = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency,"
    r" ([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th"
)
PACED_PRODUCER_SOURCE = Path(__file__).resolve().parent / "PacedProducer.java"


def _java_command(main: str, arguments: list[str]) -> list[str]:
    return [find_java(), *PERF_TEST_JVM, "-cp", f"{kafka_libs()}/*", main, *arguments]


def _run_tool(main_class: str, arguments: list[str], timeout: float = 600) -> str:
    done = subprocess.run(
        _java_command(main_class, arguments),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{main_class} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def producer_perf_test(
    bootstrap: str,
    topic: str,
    count: int,
    size: int,
    codec: str,
    acks: str = "1",
    throughput: int = -1,
    config_file: Path | None = None,
) -> loadgen.Result:
    """``count`` records of ``size`` bytes, at most ``throughput`` per second (-1: as fast
    as it goes); the rate and the acknowledgement latencies the tool reports.
    ``config_file``: the producer's client properties for a secured listener (S15), the
    tool's ``--producer.config``."""
    secured = ["--producer.config", str(config_file)] if config_file else []
    stdout = _run_tool(
        "org.apache.kafka.tools.ProducerPerformance",
        [
            "--topic",
            topic,
            "--num-records",
            str(count),
            "--record-size",
            str(size),
            "--throughput",
            str(throughput),
            *secured,
            "--producer-props",
            f"bootstrap.servers={bootstrap}",
            f"acks={acks}",
            "batch.size=65536",
            "linger.ms=5",
            f"compression.type={codec}",
        ],
    )
    matches = _PRODUCER_LINE.findall(stdout)
    if not matches:
        raise RuntimeError(f"kafka-producer-perf-test printed no summary:\n{stdout}")
    sent, per_s, _mib, _avg, _max, p50, _p95, p99, p999 = matches[-1]
    latency = {"p50": float(p50), "p99": float(p99), "p99.9": float(p999)}
    return loadgen.Result(int(sent), int(sent) * size, int(sent) / float(per_s), latency)


def consumer_perf_test(bootstrap: str, topic: str, count: int, group: str) -> loadgen.Result:
    """``count`` records of ``topic`` read by a consumer of group ``group`` (subscribed,
    from the earliest offsets); the time is the tool's fetch time, the group join left
    out."""
    stdout = _run_tool(
        "org.apache.kafka.tools.ConsumerPerformance",
        [
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--messages",
            str(count),
            "--group",
            group,
            "--timeout",
            "60000",
        ],
    )
    lines = [line for line in stdout.splitlines() if line.strip()]
    header = [name.strip() for name in lines[-2].split(",")]
    values = dict(zip(header, (v.strip() for v in lines[-1].split(",")), strict=True))
    records = int(values["data.consumed.in.nMsg"])
    if records < count:
        raise RuntimeError(f"kafka-consumer-perf-test read {records} of {count}:\n{stdout}")
    seconds = float(values["fetch.time.ms"]) / 1000
    return loadgen.Result(records, int(float(values["data.consumed.in.MB"]) * loadgen.MB), seconds)


class JavaPacedProducer(loadgen.Acknowledgements):
    """:class:`loadgen.PacedProducer`'s twin on Apache Kafka's Java producer
    (``PacedProducer.java``, its own process): an idempotent acks=all producer sends a
    1 KiB record to partition 0 of ``topic`` about every millisecond until the ``with``
    block ends. Its acknowledgements arrive on its standard output in the clock of
    ``time.perf_counter``; its log goes to ``log``."""

    def __init__(self, bootstrap: str, topic: str, log: Path):
        super().__init__()
        self._log = log
        self._process: subprocess.Popen | None = None
        self._command = _java_command(str(PACED_PRODUCER_SOURCE), [bootstrap, topic])
        self._reader = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        for line in self._process.stdout:
            if line.startswith("failed "):
                self.failed.append(line.removeprefix("failed ").strip())
            else:
                sent, acknowledged = line.split()
                self.acked.append((int(sent) / 1e9, int(acknowledged) / 1e9))

    def __enter__(self) -> JavaPacedProducer:
        with self._log.open("w") as log:
            self._process = subprocess.Popen(
                self._command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True
            )
        self._reader.start()
        return self

    def __exit__(self, *_) -> None:
        """Closing its input ends the sending; it flushes what is left before it exits
        (killed if it has not within two minutes)."""
        self._process.stdin.close()
        try:
            code = self._process.wait(120)
        except subprocess.TimeoutExpired:
            self._process.kill()
            code = self._process.wait()
        self._reader.join()
        if code != 0 or self.failed:
            tail = self._log.read_text()[-2000:]
            raise RuntimeError(
                f"PacedProducer.java exit {code}, failures {self.failed[:3]}:\n{tail}"
            )
