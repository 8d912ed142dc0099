"""The Spark image (``make images``): as a driver (spark-submit in client mode, what a
Spark-on-Kubernetes driver pod runs) it reads a tidelog topic with Spark's Kafka source
from the connector among Spark's own jars; it runs the tick generator; it runs as the
non-root user; and the executor role says which of Spark's variables it lacks."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from containers.docker_cluster import DockerCluster, broker_image, docker, local_image
from tidelog.admin import AdminClient
from waiting import wait_until

pytestmark = pytest.mark.timeout(300)

COUNT = 400

# A driver program: what the Kafka source reads, from inside the image.
PROBE = """
import sys
from tidelog_spark.session import spark_session

spark = spark_session("probe")
ticks = (
    spark.read.format("kafka")
    .option("kafka.bootstrap.servers", sys.argv[1])
    .option("subscribe", sys.argv[2])
    .load()
)
print("records", ticks.count(), "symbols", ticks.select("key").distinct().count())
spark.stop()
"""


def spark_image() -> str:
    return local_image("TIDELOG_SPARK_IMAGE")


@pytest.fixture(scope="module")
def cluster() -> Iterator[DockerCluster]:
    with DockerCluster(broker_image(), size=1) as cluster:
        wait_until(
            lambda: AdminClient(cluster.bootstrap, timeout=5).metadata([]).brokers,
            "the broker registered",
            90,
        )
        yield cluster


def run_spark_image(cluster: DockerCluster, *args: str, options: tuple[str, ...] = ()):
    return subprocess.run(
        ["docker", "run", "--rm", f"--network={cluster.network}", *options, spark_image(), *args],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def test_the_driver_role_reads_ticks_the_image_wrote(cluster, tmp_path):
    AdminClient(cluster.bootstrap).create_topic("ticks", 3, 1)
    ticks = run_spark_image(
        cluster,
        *("tidelog-ticks", "--bootstrap-server", "broker-1:9092", "--rate", "0"),
        *("--count", str(COUNT)),
    )
    assert ticks.returncode == 0, ticks.stderr
    probe = Path(tmp_path, "probe")
    probe.mkdir(mode=0o755)
    tmp_path.chmod(0o755)  # the image's user reads it
    (probe / "probe.py").write_text(PROBE)
    (probe / "probe.py").chmod(0o644)
    driver = run_spark_image(
        cluster,
        *("driver", "--master", "local[1]", "/probe/probe.py", "broker-1:9092", "ticks"),
        options=(f"--volume={probe}:/probe:ro",),
    )
    assert driver.returncode == 0, driver.stderr[-3000:]
    assert f"records {COUNT} symbols 5" in driver.stdout, driver.stdout


def test_it_runs_as_tidelog_and_the_executor_role_names_what_it_lacks(cluster):
    user = run_spark_image(cluster, "id", "-un")
    assert (user.returncode, user.stdout.strip()) == (0, "tidelog")
    executor = run_spark_image(cluster, "executor", options=("--env=SPARK_DRIVER_URL=x",))
    assert executor.returncode == 2
    assert executor.stderr.strip() == "tidelog-spark: executor needs SPARK_EXECUTOR_ID"
    usage = run_spark_image(cluster)
    assert usage.returncode == 2 and usage.stderr.startswith("usage: driver")
    assert docker("image", "inspect", "--format", "{{.Config.User}}", spark_image()) == "1001:1001"
