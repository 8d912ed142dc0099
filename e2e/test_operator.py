"""The operator on kind, as a user runs it: ``helm install`` of the chart, the examples
applied as they are (a Cluster of three brokers on two local disks each, two Topics, a
ConsumerGroup). The Cluster becomes Ready, each broker's volumes are the disks of its
node, clients lose nothing, Topics and ConsumerGroups do what their specs say (a
ConsumerGroup's Spark pipeline among them), a deleted
broker pod comes back on its node with its data, a config change rolls the brokers,
scaling moves data before brokers go and after they come, ``helm test`` passes, and
removing it all leaves nothing the operator made."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from bar_oracle import expected_bars, known_ticks
from e2e.conftest import Progress, spark_image
from e2e.operator_deployment import OperatorDeployment
from e2e.spark_pipeline import SparkPipeline


@pytest.fixture(scope="module", autouse=True)
def spark_node(deployment: OperatorDeployment) -> Iterator[Future[str]]:
    """The worker no broker runs on, where the Spark test keeps its pipeline's checkpoint
    (so its driver and executors run there), once the Spark image is loaded into every
    worker: the operator's submitter Jobs and the tick pods may land on any of them. The
    load (a minute or more) runs in the background from the module's first test on,
    beside the light tests before the Spark test."""
    brokers_on = {p["spec"]["nodeName"] for p in broker_pods(deployment).values()}
    workers = deployment.cluster.workers()
    node = next(n for n in workers if n not in brokers_on)

    def load() -> str:
        deployment.cluster.load(spark_image(), nodes=workers)
        return node

    with ThreadPoolExecutor(1) as pool:
        yield pool.submit(load)


# The example Cluster's disks, and the log dir of volume <n>: f"{DATA}-<n>".
DISKS = ["/mnt/disks/0", "/mnt/disks/1"]
DATA = "/var/lib/tidelog/data"
STEADY_PRODUCER_MAX = 15 * 600  # records: a steady producer stops after 10 minutes anyway


def broker_pods(deployment: OperatorDeployment) -> dict[str, dict]:
    pods = deployment.get("pods", "--selector", "app.kubernetes.io/component=broker")["items"]
    return {p["metadata"]["name"]: p for p in pods}


def test_the_cluster_is_ready_with_each_brokers_volumes_on_its_node(deployment):
    status = deployment.get("cluster/events")["status"]
    assert status["readyBrokers"] == 3 and status["controller"] in (0, 1, 2)
    assert status["bootstrap"] == "events-bootstrap.e2e-operator.svc:9092"
    nodes = set()
    for name, pod in broker_pods(deployment).items():
        node = pod["spec"]["nodeName"]
        nodes.add(node)
        for disk in (0, 1):
            claim = deployment.get(f"persistentvolumeclaim/data-{disk}-{name}")
            volume = deployment.cluster.get(f"persistentvolume/{claim['spec']['volumeName']}")
            assert volume["metadata"]["labels"]["tidelog.dev/node"] == node, (name, disk)
            assert volume["spec"]["local"]["path"] == f"/mnt/disks/{disk}"
            assert volume["metadata"]["labels"]["tidelog.dev/disk"] == str(disk)
    assert len(nodes) == 3, "the brokers share a node"
    dirs = {d["path"] for b in status["brokers"] for d in b.get("logDirs", [])}
    assert dirs == {"/var/lib/tidelog/data-0", "/var/lib/tidelog/data-1"}
    assert all(d["capacityBytes"] > 0 for b in status["brokers"] for d in b["logDirs"])
    table = deployment.kubectl("get", "tidelog")
    assert "cluster.tidelog.dev/events" in table and "topic.tidelog.dev/orders" in table


def test_the_operator_is_refused_nothing_it_asks_for(deployment):
    """The chart's RBAC covers what the operator does, kopf's own watches included: the
    API server refuses with 403 Forbidden, and kopf logs each refusal."""
    log = deployment.kubectl(
        "logs",
        "--namespace",
        deployment.operator_namespace,
        f"deployment/{deployment.operator_name}",
    )
    refused = [line for line in log.splitlines() if "Forbidden" in line]
    assert not refused, "\n".join(refused[:5])


def test_clients_lose_nothing_on_the_example_topic(deployment):
    deployment.wait_for_reason("topic/orders", "Ready", "Synced", "the orders topic synced")
    produced = deployment.client(
        "produce", "--topic", "orders", "--count", "2000", "--prefix", "ok", "--idempotent"
    )
    assert produced["acknowledged"] == 2000, produced
    consumed = deployment.client(
        "consume", "--topic", "orders", "--expect", "2000", "--prefix", "ok"
    )
    _assert_once_in_order(consumed)


def test_a_topic_grows_refuses_to_shrink_reverts_drift_and_goes(deployment):
    manifest = """
apiVersion: tidelog.dev/v1alpha1
kind: Topic
metadata: {name: scratch}
spec: {clusterRef: events, partitions: %d, replicationFactor: 2, config: {retention.ms: "3600000"}}
"""
    deployment.kubectl("apply", "--filename", "-", input=manifest % 2)
    deployment.wait_for_reason("topic/scratch", "Ready", "Synced", "the scratch topic created")
    deployment.kubectl("apply", "--filename", "-", input=manifest % 4)
    deployment.wait_for(
        lambda: len(deployment.client("describe-topic", "--topic", "scratch")["partitions"]) == 4,
        "4 partitions",
    )
    deployment.kubectl("apply", "--filename", "-", input=manifest % 3)
    deployment.wait_for_reason(
        "topic/scratch", "Ready", "PartitionsDecreaseRefused", "the decrease refused"
    )
    deployment.kubectl("apply", "--filename", "-", input=manifest % 4)
    deployment.wait_for_reason("topic/scratch", "Ready", "Synced", "synced again")
    changed = deployment.client("set-config", "--topic", "scratch", "--config", "retention.ms=1000")
    assert changed["error_code"] == 0, changed
    deployment.wait_for(
        lambda: deployment.get("topic/scratch")["status"].get("observedGeneration")
        and _retention(deployment, "scratch") == "3600000",
        "the drift reverted",
        timeout=120,
    )
    deployment.kubectl("delete", "topic/scratch", "--wait=true", timeout=120)
    assert deployment.client("describe-topic", "--topic", "scratch", check=False)["error_code"] == 3


def _retention(deployment: OperatorDeployment, topic: str) -> str:
    output = _topics_tool(deployment, "--describe", "--topic", topic)
    configs = output.splitlines()[0].split("Configs: ")[1]
    return dict(item.split("=", 1) for item in configs.split(",") if item).get("retention.ms", "")


def test_a_consumer_group_reset_waits_for_an_empty_group(deployment):
    deployment.wait_for_reason("topic/orders", "Ready", "Synced", "the orders topic synced")
    deployment.client("produce", "--topic", "orders", "--count", "100", "--prefix", "lag")
    consumed = deployment.client(
        "consume",
        "--topic",
        "orders",
        "--expect",
        "100",
        "--prefix",
        "lag",
        "--group",
        "order-readers",
    )
    assert consumed["missing_count"] == 0
    deployment.wait_for(
        lambda: deployment.get("consumergroup/order-readers")["status"].get("state") == "Empty"
        and deployment.get("consumergroup/order-readers")["status"]["totalLag"] == 0,
        "the group's lag observed",
    )
    deployment.kubectl(
        "patch",
        "consumergroup/order-readers",
        "--type=merge",
        "--patch",
        '{"spec": {"reset": {"id": "replay-1", "to": "earliest"}}}',
    )
    deployment.wait_for(
        lambda: deployment.get("consumergroup/order-readers")["status"]
        .get("lastReset", {})
        .get("id")
        == "replay-1",
        "the reset applied",
    )
    status = deployment.get("consumergroup/order-readers")["status"]
    assert status["totalLag"] >= 100  # every record of the topic, again
    row = deployment.kubectl("get", "consumergroup/order-readers").splitlines()[1].split()
    assert row[3] == "Empty" and int(row[5]) == status["totalLag"]


# The Spark test's ticks: minute-aligned event times an hour ago (within the topics'
# retention), five minutes of them per batch.
TICKS_START_MS = (time.time_ns() // 60_000_000_000 - 60) * 60_000
TICKS_COUNT, TICKS_SPACING_MS = 1200, 250


def test_a_spark_pipeline_runs_as_a_consumer_group_restarts_and_replays(
    deployment, spark_node, pytestconfig
):
    """examples/spark: the operator submits the pipeline; its bars are right and its lag
    reaches 0; a deleted driver is submitted again and resumes from its checkpoint (no bar
    written twice); a reset to earliest stops it, moves the offsets and starts it again,
    and every bar is computed anew."""
    progress = Progress(pytestconfig)
    node = spark_node.result(timeout=600)
    progress.done("waited for the Spark image, loaded into the workers in the background")
    pipeline = SparkPipeline(deployment, spark_image(), node)
    pipeline.install()
    try:
        # The ticks go in while the application starts (a minute or two): the group has
        # no offsets yet, so it reads from the earliest.
        deployment.wait_for_reason("topic/ticks", "Ready", "Synced", "the ticks topic synced")
        first = known_ticks(7, TICKS_START_MS, TICKS_COUNT, TICKS_SPACING_MS)
        pipeline.send_ticks(7, TICKS_START_MS, TICKS_COUNT, TICKS_SPACING_MS)
        deployment.wait_for(lambda: pipeline.running(1), "the application running", 300)
        expected = expected_bars(first)
        assert len(expected) == 5 * 4  # five symbols, four closed minutes
        deployment.wait_for(lambda: len(pipeline.bars()) == len(expected), "the bars", 300)
        assert dict(pipeline.bars()) == expected
        deployment.wait_for(
            lambda: deployment.get("consumergroup/bars")["status"].get("totalLag") == 0,
            "the group's lag at 0",
        )

        deployment.kubectl("delete", "pod", pipeline.application()["driverPod"])
        # More ticks while no driver runs: the next one reads them from its checkpoint on.
        second_start = TICKS_START_MS + TICKS_COUNT * TICKS_SPACING_MS
        second = known_ticks(8, second_start, TICKS_COUNT, TICKS_SPACING_MS)
        pipeline.send_ticks(8, second_start, TICKS_COUNT, TICKS_SPACING_MS)
        deployment.wait_for(lambda: pipeline.running(2), "the application running again", 300)
        assert pipeline.application()["restarts"] == 1
        assert "ApplicationFailed" not in pipeline.events()  # deleted is not failed
        # Running is the driver's pod; the pipeline says where it starts once its Spark
        # session is up, tens of seconds later on a busy node.
        deployment.wait_for(
            lambda: "starting from" in pipeline.driver_log(2), "the driver says where it starts"
        )
        assert "starting from the checkpoint" in pipeline.driver_log(2)
        expected = expected_bars(first + second)
        assert len(expected) == 5 * 9
        deployment.wait_for(lambda: len(pipeline.bars()) >= len(expected), "more bars", 300)
        written = pipeline.bars()
        assert len(written) == len(expected)  # none twice: it resumed where it was
        assert dict(written) == expected

        deployment.kubectl(
            "patch",
            "consumergroup/bars",
            "--type=merge",
            "--patch",
            '{"spec": {"reset": {"id": "replay-1", "to": "earliest"}}}',
        )
        deployment.wait_for(lambda: pipeline.running(3), "the application started anew", 300)
        status = deployment.get("consumergroup/bars")["status"]
        assert status["lastReset"]["id"] == "replay-1"
        reasons = pipeline.events()
        assert reasons.index("ApplicationStopping") < reasons.index("ResetApplied")
        deployment.wait_for(
            lambda: len(pipeline.bars()) == 2 * len(expected), "the bars computed anew", 300
        )
        assert dict(pipeline.bars()) == expected
    finally:
        pipeline.remove()


def test_a_deleted_broker_pod_comes_back_on_its_node_with_its_data(deployment):
    produced = deployment.client(
        "produce", "--topic", "orders", "--count", "500", "--prefix", "kept"
    )
    assert produced["acknowledged"] == 500, produced
    before = broker_pods(deployment)["events-broker-1"]
    node = before["spec"]["nodeName"]
    listing = deployment.kubectl("exec", "events-broker-1", "--", "ls", "/var/lib/tidelog/data-0")
    deployment.kubectl("delete", "pod", "events-broker-1", "--wait=true", timeout=180)
    deployment.wait_for(
        lambda: (p := broker_pods(deployment).get("events-broker-1"))
        and p["metadata"]["uid"] != before["metadata"]["uid"]
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in p["status"].get("conditions", [])
        ),
        "broker 1 back",
        timeout=300,
    )
    assert broker_pods(deployment)["events-broker-1"]["spec"]["nodeName"] == node
    after = deployment.kubectl("exec", "events-broker-1", "--", "ls", "/var/lib/tidelog/data-0")
    kept = {name for name in listing.split() if name.startswith("orders-")}
    assert kept and kept <= set(after.split())
    consumed = deployment.client(
        "consume", "--topic", "orders", "--expect", "500", "--prefix", "kept"
    )
    _assert_once_in_order(consumed)


def test_a_config_change_and_a_new_disk_roll_every_broker_while_a_producer_runs(deployment):
    """One broker at a time, the controller last, never below min.insync.replicas: an
    acks=all producer at 15 records a second sees every record acknowledged. The disk
    added at the same time (``/mnt/disks/2``, volume 2) needs the StatefulSet made anew
    (claim templates are immutable); its pods run on until the roll restarts them with
    the new log dir, where a new topic's replicas then go first (the fewest partitions)."""
    producer = _steady_producer(deployment, "roll")
    before = _update_revision(deployment)
    patch = {
        "spec": {
            "brokers": {"config": {"num.io.threads": 4}},
            "storage": {"local": {"disks": [*DISKS, "/mnt/disks/2"]}},
        }
    }
    deployment.kubectl("patch", "cluster/events", "--type=merge", "--patch", json.dumps(patch))
    deployment.wait_for(
        lambda: _rolled_past(deployment, before),
        "every broker restarted on the new config and disk",
        timeout=600,
    )
    templates = deployment.get("statefulset/events-broker")["spec"]["volumeClaimTemplates"]
    assert [t["metadata"]["name"] for t in templates] == ["data-0", "data-1", "data-2"]
    _topics_tool(deployment, "--create", "--topic", "fresh", "--partitions", "3")
    placed = _placement(deployment, "fresh", lambda dirs: True)
    assert placed == {(b, f"{DATA}-2") for b in (0, 1, 2)}, placed
    _nothing_lost(deployment, producer, "roll")
    events = deployment.kubectl(
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=events,reason=RollingRestart",
        "--output",
        "jsonpath={.items[*].message}",
    )
    assert sorted(set(re.findall(r"broker (\d) runs an old revision", events))) == ["0", "1", "2"]
    # a pod in its controlled shutdown is waited for, not deleted again as unready
    assert "is stale and not ready" not in events, events


def _rolled_past(deployment: OperatorDeployment, before: str | None) -> bool:
    """Every broker pod runs a StatefulSet revision other than ``before``, and the
    Cluster is Ready with no roll in progress."""
    revision = _update_revision(deployment)
    pods = broker_pods(deployment).values()
    return (
        revision not in (None, before)
        and all(p["metadata"]["labels"]["controller-revision-hash"] == revision for p in pods)
        and deployment.condition("cluster/events", "Progressing").get("reason") == "Idle"
        and deployment.condition("cluster/events", "Ready").get("status") == "True"
    )


@pytest.fixture
def third_disk(deployment: OperatorDeployment) -> None:
    """The Cluster on a third disk (``/mnt/disks/2``, volume 2), with topic ``fresh``'s
    replicas on it: what the roll test above leaves; made here when that test did not
    run first (this test run alone)."""
    disks = deployment.get("cluster/events")["spec"]["storage"]["local"]["disks"]
    if "/mnt/disks/2" in disks:
        return
    before = _update_revision(deployment)
    patch = {"spec": {"storage": {"local": {"disks": [*DISKS, "/mnt/disks/2"]}}}}
    deployment.kubectl("patch", "cluster/events", "--type=merge", "--patch", json.dumps(patch))
    deployment.wait_for(
        lambda: _rolled_past(deployment, before), "every broker restarted with the disk", 600
    )
    _topics_tool(deployment, "--create", "--topic", "fresh", "--partitions", "3")
    _placement(deployment, "fresh", lambda dirs: dirs == {(b, f"{DATA}-2") for b in (0, 1, 2)})


def _update_revision(deployment: OperatorDeployment) -> str | None:
    """The brokers' StatefulSet's update revision; None just after it is made anew (a
    new disk: deleted and created again), before its controller writes a status. While
    it is gone, ``get`` raises ClusterError, which ``wait_for`` reads as not yet."""
    status = deployment.get("statefulset/events-broker").get("status") or {}
    return status.get("updateRevision")


def test_a_removed_disk_is_drained_before_the_brokers_restart_without_it(deployment, third_disk):
    """The disk goes from the spec again: every broker drains its dir (its replicas move
    to the broker's other dirs), and only then does the StatefulSet lose the volume and
    the roll restart the brokers without it; an acks=all producer loses nothing. The
    claims stay (claimRetention Retain) until the user deletes them; their disks are
    then wiped and free again."""
    producer = _steady_producer(deployment, "unmount")
    patch = {"spec": {"storage": {"local": {"disks": DISKS}}}}
    deployment.kubectl("patch", "cluster/events", "--type=merge", "--patch", json.dumps(patch))

    def removed() -> bool:
        status = deployment.get("cluster/events")["status"]
        pods = broker_pods(deployment).values()
        return (
            (status.get("volumes") or {}).get("state") == "Done"
            and not any(v["name"] == "data-2" for p in pods for v in p["spec"]["volumes"])
            and deployment.condition("cluster/events", "Ready").get("status") == "True"
        )

    deployment.wait_for(removed, "the disk drained, unmounted and gone from every broker", 900)
    record = deployment.get("cluster/events")["status"]["volumes"]
    assert record["removed"] == [2] and record["replicasLeft"] == 0, record
    drained = deployment.kubectl(
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=events,reason=DrainingVolumes",
        "--output",
        "jsonpath={.items[*].message}",
    )
    assert "draining data-2" in drained, drained
    placed = _placement(
        deployment, "fresh", lambda dirs: all(d in (f"{DATA}-0", f"{DATA}-1") for _, d in dirs)
    )
    assert placed, placed
    _nothing_lost(deployment, producer, "unmount")
    _topics_tool(deployment, "--delete", "--topic", "fresh")
    claims = [f"data-2-events-broker-{b}" for b in (0, 1, 2)]
    deployment.kubectl("delete", "pvc", *claims)
    deployment.wait_for(
        lambda: all(
            v["status"]["phase"] == "Available"
            for v in deployment.cluster.get("pv", "--selector", "tidelog.dev/disk=2")["items"]
        ),
        "the removed disk's volumes wiped and free",
        300,
    )


def _placement(deployment: OperatorDeployment, topic: str, good) -> set[tuple[int, str]]:
    """The (broker, log dir) pairs holding the replicas of ``topic`` (three partitions,
    three replicas each) once every replica is placed and ``good`` says the placement
    is what the test waits for; read again while a broker does not answer."""
    found: list[set[tuple[int, str]]] = []

    def placed() -> bool:
        dirs = _log_dirs(deployment, topic)
        found.append({d for d, partitions in dirs.items() if partitions})
        return sum(len(p) for p in dirs.values()) == 9 and good(found[-1])

    deployment.wait_for(placed, f"every replica of {topic} placed as expected")
    return found[-1]


def _log_dirs(deployment: OperatorDeployment, topic: str) -> dict[tuple[int, str], list[str]]:
    """(broker, log dir) → the replicas of ``topic`` there, from ``tidelog-log-dirs
    --describe`` run in the toolbox as a user runs it."""
    output = deployment.kubectl(
        "exec",
        "toolbox",
        "--",
        "tidelog-log-dirs",
        "--bootstrap-server",
        "events-bootstrap:9092",
        "--describe",
        "--topic-list",
        topic,
    )
    described = json.loads(output.strip().splitlines()[-1])
    return {
        (broker["broker"], d["logDir"]): [p["partition"] for p in d["partitions"]]
        for broker in described["brokers"]
        for d in broker["logDirs"]
    }


def test_scaling_moves_the_data_first_and_refuses_to_go_below_a_replication_factor(
    deployment,
):
    """``kubectl scale`` to 4: broker 3 starts on the spare worker and the operator
    spreads replicas onto it; back to 3: broker 3 is drained, then removed; to 2: refused
    (the topics have 3 replicas), nothing moves. An acks=all producer runs throughout and
    every record it saw acknowledged is there afterwards."""
    producer = _steady_producer(deployment, "scale")
    deployment.kubectl("scale", "cluster/events", "--replicas=4")
    deployment.wait_for(
        lambda: _moved(deployment, "AddBrokers", spread=4), "replicas spread onto broker 3", 600
    )
    move = deployment.get("cluster/events")["status"]["rebalance"]
    assert move["brokers"] == [3] and move["partitions"] > 0, move
    assert (move["partitionsDone"], move["bytesDone"]) == (move["partitions"], move["bytes"])
    counts = _replica_counts(deployment)
    assert set(counts) == {0, 1, 2, 3} and max(counts.values()) - min(counts.values()) <= 1

    _scale_back_to_three(deployment)
    drained = _replica_counts(deployment)
    assert 3 not in drained

    deployment.kubectl("scale", "cluster/events", "--replicas=2")
    message = deployment.wait_for_reason(
        "cluster/events", "Progressing", "ScaleDownRefused", "the scale-down to 2 refused"
    )["message"]
    assert "replication factor 3" in message, message
    assert deployment.get("statefulset/events-broker")["spec"]["replicas"] == 3
    assert _replica_counts(deployment) == drained
    deployment.kubectl("scale", "cluster/events", "--replicas=3")

    _nothing_lost(deployment, producer, "scale")


def _steady_producer(deployment: OperatorDeployment, prefix: str):
    """An idempotent acks=all producer to orders, 15 records a second, that runs while the
    test goes on until :func:`_nothing_lost` stops it (or for 10 minutes), returned once
    its first record is acknowledged."""
    return deployment.producer_started(
        "--topic",
        "orders",
        "--count",
        str(STEADY_PRODUCER_MAX),
        "--per-second",
        "15",
        "--prefix",
        prefix,
        "--idempotent",
    )


def _nothing_lost(deployment: OperatorDeployment, producer, prefix: str) -> None:
    """Stop the steady producer: every record it sent was acknowledged, and is in the
    topic once, in order."""
    produced = deployment.producer_stopped(producer)
    assert produced["failures"] == [], produced
    assert produced["acknowledged"] == produced["sent"] > 0, produced
    consumed = deployment.client(
        "consume", "--topic", "orders", "--expect", str(produced["sent"]), "--prefix", prefix
    )
    _assert_once_in_order(consumed)


def _assert_once_in_order(consumed: dict) -> None:
    """Every record an idempotent producer had acknowledged was read, once, in order."""
    assert (consumed["missing_count"], consumed["duplicates"], consumed["out_of_order"]) == (
        0,
        0,
        0,
    ), consumed


def _scale_back_to_three(deployment: OperatorDeployment) -> None:
    """``kubectl scale`` to 3 brokers; broker 3 is drained, then the StatefulSet shrinks."""
    deployment.kubectl("scale", "cluster/events", "--replicas=3")
    deployment.wait_for(
        lambda: _moved(deployment, "RemoveBrokers", spread=3)
        and deployment.get("statefulset/events-broker")["spec"]["replicas"] == 3,
        "broker 3 drained, then removed",
        600,
    )


def _moved(deployment: OperatorDeployment, operation: str, spread: int) -> bool:
    """The last movement of replicas is ``operation`` and done, and the data is spread
    over brokers ``0 .. spread-1``: each holds replicas, and no other broker is listed."""
    status = deployment.get("cluster/events").get("status", {})
    move = status.get("rebalance", {})
    brokers = status.get("brokers", [])
    return (
        move.get("operation") == operation
        and move.get("state") == "Done"
        and sorted(b["id"] for b in brokers) == list(range(spread))
        and all(b.get("replicas", 0) > 0 for b in brokers)
    )


def _leaders(deployment: OperatorDeployment) -> dict[int, int]:
    """Leaderships per broker over every topic."""
    return _per_broker(re.findall(r"\tLeader: (-?\d+)", _describe_topics(deployment)))


def _replica_counts(deployment: OperatorDeployment) -> dict[int, int]:
    """Replicas per broker over every topic."""
    listed = re.findall(r"\tReplicas: ([\d,]+)", _describe_topics(deployment))
    return _per_broker(b for replicas in listed for b in replicas.split(","))


def _describe_topics(deployment: OperatorDeployment) -> str:
    """``tidelog-topics --describe`` of every topic."""
    return _topics_tool(deployment, "--describe")


def _topics_tool(deployment: OperatorDeployment, *args: str) -> str:
    """``tidelog-topics`` against the Cluster, run in the toolbox as a user runs it."""
    return deployment.kubectl(
        "exec",
        "toolbox",
        "--",
        "tidelog-topics",
        "--bootstrap-server",
        "events-bootstrap:9092",
        *args,
    )


def _per_broker(ids) -> dict[int, int]:
    counts: dict[int, int] = {}
    for broker in ids:
        counts[int(broker)] = counts.get(int(broker), 0) + 1
    return counts


def test_a_full_disk_goes_offline_alone_and_its_replicas_go_to_an_added_broker(deployment):
    """Broker 1's first disk filled until writes fail (``dd`` into the node's real disk):
    that log dir goes offline, the broker serves on from its other one, and the Cluster
    turns Degraded naming broker and dir. With ``drainFailedDirs`` the operator refuses
    to copy while every broker holds a replica of those partitions already, and copies
    them to broker 3 once the user scales to 4 (broker 3 then holds replicas: it is
    not an empty broker to fill); a replica rebalance the user asks for waits for the
    disk. Emptied and the pod deleted, the dir is back and the rebalance runs; scaled to
    3 again, broker 3 is drained. An acks=all producer runs throughout and loses
    nothing."""
    cluster = deployment.cluster
    pod = "events-broker-1"
    node = broker_pods(deployment)[pod]["spec"]["nodeName"]
    claim = deployment.get("persistentvolumeclaim/data-0-events-broker-1")
    disk = cluster.get(f"persistentvolume/{claim['spec']['volumeName']}")["spec"]["local"]["path"]
    filler = f"{disk}/filler"
    producer = _steady_producer(deployment, "full")
    try:
        # Each dd stops at ENOSPC, the second one in the last blocks the first left (the
        # file system has no reserved blocks): not even a checkpoint file fits then.
        fill = f"mkdir {filler} && dd if=/dev/zero of={filler}/big bs=1M; "
        fill += f"dd if=/dev/zero of={filler}/tail bs=4k"
        cluster.node_exec(node, "sh", "-c", fill, check=False)
        message = deployment.wait_for_reason(
            "cluster/events", "Degraded", "LogDirOffline", "the full dir offline", 120
        )["message"]
        assert "broker 1: " in message, message
        _set_storage(deployment, drainFailedDirs=True)
        message = deployment.wait_for_reason(
            "cluster/events",
            "Progressing",
            "DrainRefused",
            "the copy refused: every broker holds a replica already",
        )["message"]
        assert "add a broker" in message, message

        deployment.kubectl("scale", "cluster/events", "--replicas=4")
        deployment.wait_for(
            lambda: _moved(deployment, "DrainFailedDirs", spread=4)
            and _fully_replicated(deployment),
            "the lost replicas copied to broker 3",
            600,
        )
        copied = deployment.get("cluster/events")["status"]["rebalance"]
        assert copied["brokers"] == [1] and copied["replicas"] > 0, copied
        deployment.kubectl("annotate", "cluster/events", "tidelog.dev/rebalance=replicas")
        deployment.wait_for(
            lambda: "once the failed log dirs are repaired"
            in deployment.condition("cluster/events", "Progressing").get("message", ""),
            "the requested rebalance waiting for the disk",
        )
    finally:
        cluster.node_exec(node, "rm", "-rf", filler)
    deployment.kubectl("delete", "pod", pod, "--wait=true", timeout=180)
    deployment.wait_for(
        lambda: _moved(deployment, "Rebalance", spread=4)
        and deployment.condition("cluster/events", "Degraded").get("reason") == "Healthy",
        "the dir back online, then the replicas rebalanced",
        600,
    )
    _set_storage(deployment, drainFailedDirs=False)
    _scale_back_to_three(deployment)
    _nothing_lost(deployment, producer, "full")


def _set_storage(deployment: OperatorDeployment, **storage: bool) -> None:
    patch = json.dumps({"spec": {"storage": storage}})
    deployment.kubectl("patch", "cluster/events", "--type=merge", "--patch", patch)


def test_leaders_come_back_on_schedule_and_a_requested_rebalance_evens_out_replicas(
    deployment,
):
    """Broker 0's pod deleted: it comes back leading nothing, and the operator's
    scheduled preferred-leader election (every 20 s here; the example leaves the
    brokers' own automatic one off) gives its leaderships back. A topic made skewed on
    purpose, then ``tidelog.dev/rebalance=replicas``: the planner evens the replicas out
    and the annotation goes."""
    deployment.kubectl(
        "patch",
        "cluster/events",
        "--type=merge",
        "--patch",
        '{"spec": {"rebalance": {"leaders": {"intervalSeconds": 20}}}}',
    )
    deleted = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    deployment.kubectl("delete", "pod", "events-broker-0", "--wait=true", timeout=180)
    elections: list[dict] = []

    def preferred_lead() -> bool:
        election = deployment.get("cluster/events")["status"].get("leaderElection", {})
        if election.get("at", "") >= deleted and election.get("trigger") == "Schedule":
            elections.append(election)
        return _leaders(deployment).get(0, 0) > 0 and any(e["leadersMoved"] > 0 for e in elections)

    deployment.wait_for(preferred_lead, "broker 0 leading again after a scheduled election", 300)

    _topics_tool(
        deployment,
        "--create",
        "--topic",
        "skewed",
        "--replica-assignment",
        "0:1,0:1,0:1,0:1,0:1,0:1,0:1,0:1,0:2",
    )
    before = _replica_counts(deployment)
    assert max(before.values()) - min(before.values()) > 1, before
    deployment.kubectl("annotate", "cluster/events", "tidelog.dev/rebalance=replicas")

    def rebalanced() -> bool:
        move = deployment.get("cluster/events")["status"].get("rebalance", {})
        return move.get("operation") == "Rebalance" and move.get("state") == "Done"

    deployment.wait_for(rebalanced, "the replicas rebalanced", 300)
    move = deployment.get("cluster/events")["status"]["rebalance"]
    assert move["replicas"] > 0 and move["imbalanceBefore"] > 1 >= move["imbalanceAfter"], move
    after = _replica_counts(deployment)
    assert max(after.values()) - min(after.values()) <= 1, after
    annotations = deployment.get("cluster/events")["metadata"].get("annotations", {})
    assert "tidelog.dev/rebalance" not in annotations
    deployment.kubectl("annotate", "cluster/events", "tidelog.dev/rebalance=everything")
    deployment.wait_for(
        lambda: "tidelog.dev/rebalance"
        not in deployment.get("cluster/events")["metadata"].get("annotations", {}),
        "an unknown request refused and removed",
    )
    refused = deployment.kubectl(
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=events,reason=UnknownRequest",
        "--output",
        "jsonpath={.items[*].message}",
    )
    assert "tidelog.dev/rebalance=everything" in refused, refused
    _topics_tool(deployment, "--delete", "--topic", "skewed")


def test_a_node_gone_for_good_takes_a_brokers_disks_and_the_broker_starts_elsewhere(
    deployment,
):
    """``replaceLostVolumes``: a worker stopped for good (``docker stop``, then its Node
    deleted) with a broker's disks; the operator lets go of its claims and volumes, the
    broker starts empty on the spare worker and copies its replicas back. An idempotent
    acks=all producer runs from just before the loss for 100 s: every record is
    acknowledged and read back. The worker is started again afterwards for the tests
    that follow (its kubelet registers it anew)."""
    cluster = deployment.cluster
    pods = broker_pods(deployment)
    used = {p["spec"]["nodeName"] for p in pods.values()}
    (spare,) = set(cluster.workers()) - used
    # The spare worker's disks are held by broker 3's claims if a scaling test ran
    # before (its scale-down retained them): a user gives them back, and the operator
    # wipes and frees the volumes. Run alone, there are none, and the volumes are free.
    deployment.kubectl(
        "delete", "pvc", "data-0-events-broker-3", "data-1-events-broker-3", "--ignore-not-found"
    )
    deployment.wait_for(
        lambda: all(
            v["status"]["phase"] == "Available"
            for v in cluster.get("pv", "--selector", f"tidelog.dev/node={spare}")["items"]
        ),
        f"the volumes of {spare} free again",
        300,
    )
    _set_storage(deployment, replaceLostVolumes=True)
    toolbox = deployment.get("pod/toolbox")["spec"]["nodeName"]
    operator = cluster.get("pods", "--namespace", deployment.operator_namespace)["items"]
    keep = {toolbox} | {p["spec"]["nodeName"] for p in operator}
    victim, lost_node = next(
        (name, p["spec"]["nodeName"])
        for name, p in sorted(pods.items())
        if p["spec"]["nodeName"] not in keep
    )
    producer = _steady_producer(deployment, "lost")
    cluster.stop_node(lost_node)
    try:
        cluster.kubectl("delete", "node", lost_node, timeout=180)

        def replaced() -> bool:
            pod = broker_pods(deployment).get(victim)
            status = deployment.get("cluster/events")["status"]
            return (
                pod is not None
                and pod["spec"].get("nodeName") == spare
                and status.get("readyBrokers") == 3
                and status.get("underReplicatedPartitions") == 0
            )

        deployment.wait_for(replaced, f"{victim} copied back on {spare}", 600)
        lost = deployment.kubectl(
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=events,reason=VolumesLost",
            "--output",
            "jsonpath={.items[*].message}",
        )
        assert victim in lost, lost
        _nothing_lost(deployment, producer, "lost")
    finally:
        cluster.start_node(lost_node)
        cluster.wait_until_ready()


def test_a_deleted_claim_gets_its_disk_wiped_and_bound_again(deployment):
    """The broker on a node loses a disk's claim (and its pod): the released local
    volume is wiped by the operator and bound again, and the broker comes back on the
    same node and copies its replicas from the others."""
    claim = "data-1-events-broker-2"
    volume = deployment.get(f"persistentvolumeclaim/{claim}")["spec"]["volumeName"]
    node = broker_pods(deployment)["events-broker-2"]["spec"]["nodeName"]
    deployment.kubectl("delete", "persistentvolumeclaim", claim, "--wait=false")
    deployment.kubectl("delete", "pod", "events-broker-2", "--wait=true", timeout=180)

    def bound_again() -> bool:
        current = deployment.cluster.get(f"persistentvolume/{volume}")
        ref = current["spec"].get("claimRef") or {}
        return current["status"]["phase"] == "Bound" and ref.get("name") == claim

    deployment.wait_for(bound_again, f"{volume} wiped and bound again", timeout=300)
    deployment.wait_for(
        lambda: (p := broker_pods(deployment).get("events-broker-2"))
        and any(
            c["type"] == "Ready" and c["status"] == "True"
            for c in p["status"].get("conditions", [])
        ),
        "broker 2 back",
        timeout=300,
    )
    assert broker_pods(deployment)["events-broker-2"]["spec"]["nodeName"] == node
    recycled = deployment.kubectl(
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=events,reason=VolumeRecycled",
        "--output",
        "jsonpath={.items[*].message}",
    )
    assert volume in recycled
    deployment.wait_for(
        lambda: _fully_replicated(deployment), "every replica back in sync", timeout=300
    )


def _fully_replicated(deployment: OperatorDeployment) -> bool:
    """The operator reached the brokers and saw every replica in sync."""
    return deployment.get("cluster/events")["status"].get("underReplicatedPartitions") == 0


def test_helm_test_passes(deployment):
    output = deployment.helm(
        "test", deployment.release, "--namespace", deployment.operator_namespace
    )
    assert "Phase:          Succeeded" in output, output


@pytest.mark.removes_deployment
def test_deleting_the_cluster_and_uninstalling_leave_only_what_the_policy_keeps(deployment):
    """Last: the Topics and ConsumerGroups go (the operator deletes their topics), the
    Cluster's children go with it but for the claims (claimRetention Retain keeps them,
    and their volumes); the chart's objects go with the release. The claims are those
    there before, whichever tests ran: broker 3's (a scaling test, unless the lost-node
    test gave them back) and the third disk's (the roll test, unless the removed-disk
    test deleted them) beside every running broker's."""
    selector = "--selector=tidelog.dev/cluster=events"
    before = {
        c["metadata"]["name"] for c in deployment.get("persistentvolumeclaims", selector)["items"]
    }
    running = {f"data-{disk}-events-broker-{broker}" for disk in (0, 1) for broker in range(3)}
    assert running <= before, before
    deployment.kubectl("delete", "topics,consumergroups", "--all", "--wait=true", timeout=180)
    deployment.kubectl("delete", "cluster/events", "--wait=true", timeout=300)
    deployment.wait_for(
        lambda: not deployment.get(
            "statefulsets,services,configmaps,poddisruptionbudgets,pods", selector
        )["items"],
        "the Cluster's children collected",
        timeout=300,
    )
    claims = deployment.get("persistentvolumeclaims", selector)["items"]
    assert {c["metadata"]["name"] for c in claims} == before
    assert all(c["status"]["phase"] == "Bound" for c in claims)
    deployment.helm(
        "uninstall", deployment.release, "--namespace", deployment.operator_namespace, "--wait"
    )
    left = deployment.cluster.get(
        "deployments,serviceaccounts,services", "--namespace", deployment.operator_namespace
    )
    assert not [i for i in left["items"] if i["metadata"]["name"] != "default"], left["items"]
    roles = deployment.cluster.kubectl(
        "get", "clusterroles,clusterrolebindings,storageclasses", "--output", "name"
    )
    assert deployment.operator_name not in roles and "tidelog-local" not in roles
    # the rest (the namespace, the retained volumes, the disks wiped) goes now, which a
    # user's removal does by hand, rather than at the session's end
    deployment.remove()
