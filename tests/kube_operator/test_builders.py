"""The operator's pure builders and its broker-config check: a Cluster's spec in, the
objects (or the refusals) out. The objects themselves meet a real API server in
tests/kube_operator/test_cluster_children.py."""

from __future__ import annotations

import pytest

from tidelog_operator.broker_config import check_config, server_properties
from tidelog_operator.builders import brokers, listeners, storage, zookeeper
from tidelog_operator.cluster.children import desired_children
from tidelog_operator.spec import parse_cluster

VOLUMES = {
    "storage": {"volumes": [{"id": 1, "size": "2Gi", "class": "fast"}, {"id": 0, "size": "1Gi"}]}
}
LOCAL = {"storage": {"local": {"disks": ["/mnt/disks/0", "/mnt/disks/1"], "size": "1Gi"}}}


def cluster(spec: dict, name: str = "events", namespace: str = "prod"):
    return parse_cluster(name, namespace, spec)


def test_the_spec_defaults_are_the_crds():
    spec = cluster(VOLUMES)
    assert (spec.brokers.replicas, spec.zookeeper.replicas, spec.claim_retention) == (
        3,
        3,
        "Retain",
    )
    assert [v.id for v in spec.volumes] == [0, 1]
    assert [v.path for v in spec.volumes] == ["/var/lib/tidelog/data-0", "/var/lib/tidelog/data-1"]


def test_each_volume_is_a_claim_template_mounted_as_a_log_dir():
    spec = cluster(VOLUMES)
    keys = brokers.operator_keys(spec, "zk:2181")
    assert keys["log.dirs"] == "/var/lib/tidelog/data-0,/var/lib/tidelog/data-1"
    built = brokers.statefulset(spec, "hash-1")
    templates = built["spec"]["volumeClaimTemplates"]
    assert [t["metadata"]["name"] for t in templates] == ["data-0", "data-1"]
    assert templates[1]["spec"]["storageClassName"] == "fast"
    assert "storageClassName" not in templates[0]["spec"]  # the cluster's default class
    assert templates[0]["spec"]["resources"]["requests"]["storage"] == "1Gi"
    (container,) = built["spec"]["template"]["spec"]["containers"]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["data-1"] == "/var/lib/tidelog/data-1"
    assert built["spec"]["updateStrategy"] == {"type": "OnDelete"}
    assert built["spec"]["template"]["metadata"]["annotations"] == {
        "tidelog.dev/config-hash": "hash-1"
    }
    assert built["spec"]["persistentVolumeClaimRetentionPolicy"]["whenScaled"] == "Retain"


EXTERNAL = {"name": "external", "port": 9094, "type": "nodeport", "nodePortBase": 31000}


def test_a_broker_learns_its_id_and_names_at_start():
    spec = cluster(
        {
            **VOLUMES,
            "listeners": [{"name": "internal", "port": 9092}, EXTERNAL],
            "brokers": {"rack": {"topologyKey": "zone"}},
        }
    )
    built = brokers.statefulset(spec, "h")
    pod = built["spec"]["template"]["spec"]
    script = pod["containers"][0]["command"][2]
    assert (
        '--override "broker.id=$id" --override "advertised.listeners=$advertised"'
        ' --override "ssl.keystore.location=$keystore"'
    ) in script
    pod_host = "${POD_NAME}.${BROKERS_SERVICE}.${POD_NAMESPACE}.svc"
    assert (
        f'advertised="REPLICATION://{pod_host}:9091,INTERNAL://{pod_host}:9092,'
        'EXTERNAL://${NODE_IP}:$((31000 + id))"'
    ) in script
    assert 'keystore="/etc/tidelog/tls/broker/${POD_NAME}.pem"' in script
    assert '--override "broker.rack=$(cat /etc/tidelog/rack/rack)"' in script
    assert script.endswith(
        'exec tidelog-entrypoint tidelog-server /etc/tidelog/config/server.properties "$@"'
    )
    (init,) = pod["initContainers"]
    assert init["command"][:5] == [
        "tidelog-node-label",
        "--node",
        "$(NODE_NAME)",
        "--label",
        "zone",
    ]
    keys = brokers.operator_keys(spec, "zk:2181")
    assert keys["listeners"] == (
        "REPLICATION://0.0.0.0:9091,INTERNAL://0.0.0.0:9092,EXTERNAL://0.0.0.0:9094"
    )
    assert keys["listener.security.protocol.map"] == (
        "REPLICATION:SSL,INTERNAL:SASL_SSL,EXTERNAL:SASL_SSL"
    )
    services = listeners.node_port_services(spec)
    assert [s["metadata"]["name"] for s in services] == [
        "events-broker-0-external",
        "events-broker-1-external",
        "events-broker-2-external",
    ]
    assert [s["spec"]["ports"][0]["nodePort"] for s in services] == [31000, 31001, 31002]


def test_a_broker_has_started_once_it_listens_and_is_ready_once_it_has_metadata():
    """The startupProbe (``--listening``) passes once the logs are loaded, which it
    waits for up to an hour; readiness, probed only after it, also wants metadata."""
    (container,) = brokers.statefulset(cluster(VOLUMES), "h")["spec"]["template"]["spec"][
        "containers"
    ]
    check = ["tidelog-healthcheck", "@/tmp/tidelog-healthcheck.args"]
    startup, readiness = container["startupProbe"], container["readinessProbe"]
    assert startup["exec"]["command"] == [*check, "--listening"]
    assert startup["periodSeconds"] * startup["failureThreshold"] == 3600
    assert readiness["exec"]["command"] == check


def test_services_and_the_disruption_budget():
    spec = cluster(VOLUMES)
    headless = brokers.brokers_service(spec)
    assert headless["spec"]["clusterIP"] == "None" and headless["spec"]["publishNotReadyAddresses"]
    assert [p["port"] for p in headless["spec"]["ports"]] == [9091, 9092]
    bootstrap = brokers.bootstrap_service(spec)
    assert [p["name"] for p in bootstrap["spec"]["ports"]] == ["replication", "internal"]
    assert listeners.client_bootstrap(spec) == "events-bootstrap.prod.svc:9092"
    assert listeners.bootstrap_address(spec) == "events-bootstrap.prod.svc:9091"
    assert brokers.pod_disruption_budget(spec)["spec"]["maxUnavailable"] == 1
    assert listeners.node_port_services(spec) == []
    assert "initContainers" not in brokers.statefulset(spec, "h")["spec"]["template"]["spec"]


def test_zookeeper_is_an_ensemble_of_ours_or_an_external_one():
    spec = cluster(VOLUMES)
    assert zookeeper.connect_string(spec) == ",".join(
        f"events-zookeeper-{i}.events-zookeeper.prod.svc:2182" for i in range(3)
    )
    built = zookeeper.zookeeper_statefulset(spec, "tidelog-broker:1")
    command = built["spec"]["template"]["spec"]["containers"][0]["command"][2]
    assert "--server 2=events-zookeeper-1.events-zookeeper.prod.svc:2888:3888" in command
    assert "--my-id $(( ${HOSTNAME##*-} + 1 ))" in command
    # TLS only, for clients and among the servers; plain srvr on loopback for the probe
    assert (
        "--host 127.0.0.1 --secure-port 2182 --secure-host 0.0.0.0"
        ' --tls-keystore "/etc/tidelog/tls/zookeeper/$HOSTNAME.pem"'
        " --tls-truststore /etc/tidelog/tls/cluster-ca/ca.crt --client-auth need"
        " --quorum-tls --no-quorum-hostname-verification"
    ) in command
    keys = brokers.broker_keys(spec, zookeeper.connect_string(spec), 1)
    assert keys["zookeeper.ssl.client.enable"] == keys["zookeeper.set.acl"] == "true"
    assert keys["zookeeper.ssl.keystore.location"] == keys["ssl.keystore.location"]
    single = cluster({**VOLUMES, "zookeeper": {"replicas": 1}})
    single_command = zookeeper.zookeeper_statefulset(single, "i")["spec"]["template"]["spec"][
        "containers"
    ][0]["command"][2]
    assert "--my-id" not in single_command and "--quorum-tls" not in single_command
    external = cluster({**VOLUMES, "zookeeper": {"connect": "zk-a:2181,zk-b:2181/tidelog"}})
    assert zookeeper.connect_string(external) == "zk-a:2181,zk-b:2181/tidelog"
    assert zookeeper.zookeeper_statefulset(external, "i") is None
    external_keys = brokers.broker_keys(external, "zk-a:2181", 1)
    assert not any(key.startswith("zookeeper.ssl") for key in external_keys)
    assert "zookeeper.set.acl" not in external_keys


def test_local_disks_become_volumes_per_node_that_claims_select():
    spec = cluster(LOCAL)
    volumes = storage.local_volumes(spec, ["worker-b", "worker-a"])
    assert [v["metadata"]["name"] for v in volumes] == [
        "tidelog-prod-events-worker-a-0",
        "tidelog-prod-events-worker-a-1",
        "tidelog-prod-events-worker-b-0",
        "tidelog-prod-events-worker-b-1",
    ]
    second = volumes[1]
    assert second["spec"]["local"]["path"] == "/mnt/disks/1"
    assert second["spec"]["storageClassName"] == "tidelog-local"
    affinity = second["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
    assert affinity["matchExpressions"][0]["values"] == ["worker-a"]
    templates = brokers.statefulset(spec, "h")["spec"]["volumeClaimTemplates"]
    selector = templates[1]["spec"]["selector"]["matchLabels"]
    assert all(second["metadata"]["labels"][k] == v for k, v in selector.items())
    assert selector["tidelog.dev/disk"] == "1"
    long_name = storage.local_volume_name(cluster(LOCAL, name="x" * 250), "node", 0)
    assert len(long_name) == 253
    wipe = storage.wipe_pod(second, "tidelog-system", "tidelog-broker:1")
    assert wipe["spec"]["nodeName"] == "worker-a"
    assert wipe["spec"]["volumes"][0]["hostPath"]["path"] == "/mnt/disks/1"
    assert "lost+found" in wipe["spec"]["containers"][0]["command"]


@pytest.mark.parametrize(
    ("config", "refused"),
    [
        ({"min.insync.replicas": 2, "auto.create.topics.enable": "false"}, {}),
        ({"no.such.key": "1"}, {"no.such.key": "not a broker config"}),
        ({"log.dirs": "/tmp/x"}, {"log.dirs": "set by the operator"}),
        ({"broker.id": 7}, {"broker.id": "set by the operator"}),
        (
            {"num.io.threads": "many"},
            {
                "num.io.threads": "Invalid value many for configuration num.io.threads: "
                "Not a number of type INT"
            },
        ),
        (
            {"log.cleaner.enable": "maybe"},
            {
                "log.cleaner.enable": "Invalid value maybe for configuration log.cleaner.enable: "
                "Expected value to be either true or false"
            },
        ),
    ],
)
def test_broker_config_is_checked_against_the_brokers_table(config, refused):
    keys = brokers.broker_keys(cluster(VOLUMES), "zk:2181", 0)
    checked = check_config(config, keys)
    assert checked.refused == refused
    assert set(checked.accepted) == set(config) - set(refused)


def test_a_set_the_broker_would_refuse_is_refused_whole():
    keys = brokers.broker_keys(cluster(VOLUMES), "zk:2181", 0)
    # Kafka's KafkaConfig: replica.socket.timeout.ms (30000) >= replica.fetch.wait.max.ms
    checked = check_config({"replica.fetch.wait.max.ms": "40000", "num.io.threads": "4"}, keys)
    assert checked.accepted == {}
    assert "replica.socket.timeout.ms: must be at least replica.fetch.wait.max.ms" in (
        checked.message()
    )


def test_server_properties_hold_the_operators_keys_then_the_users():
    text = server_properties(
        {"log.dirs": "/d0"},
        {"min.insync.replicas": "2", "num.io.threads": "4"},
        {"num.io.threads": "8", "zookeeper.connection.timeout.ms": "9000"},
    )
    assert text.splitlines()[1:] == [
        "log.dirs=/d0",
        "zookeeper.connection.timeout.ms=9000",
        "min.insync.replicas=2",
        "num.io.threads=4",
    ]


def _properties(spec) -> list[str]:
    (config,) = [o for o in desired_children(spec).objects if o["kind"] == "ConfigMap"]
    return config["data"]["server.properties"].splitlines()


def test_brokers_wait_for_the_clusters_own_ensemble_as_long_as_its_servers_do():
    """Brokers start beside the ensemble's servers: with Kafka's default they would give
    up after the session timeout while the servers still elect a leader, and restart
    after the kubelet's back-off."""
    own = _properties(cluster(VOLUMES))
    assert "zookeeper.connection.timeout.ms=600000" in own
    command = zookeeper.zookeeper_statefulset(cluster(VOLUMES), "i")["spec"]["template"]["spec"][
        "containers"
    ][0]["command"][2]
    assert "--start-timeout 600 " in command
    chosen = _properties(
        cluster({**VOLUMES, "brokers": {"config": {"zookeeper.connection.timeout.ms": 30000}}})
    )
    assert [line for line in chosen if line.startswith("zookeeper.connection.timeout.ms")] == [
        "zookeeper.connection.timeout.ms=30000"
    ]
    external = cluster({**VOLUMES, "zookeeper": {"connect": "zk-a:2181"}})
    assert not any(line.startswith("zookeeper.connection") for line in _properties(external))


def test_brokers_with_a_cpu_limit_do_not_poll_for_work_unless_the_config_says_so():
    """Idle polling would spend a limited container's CPU quota."""

    def polling(brokers: dict) -> list[str]:
        lines = _properties(cluster({**VOLUMES, "brokers": brokers}))
        return [line for line in lines if line.startswith("socket.idle.poll.us")]

    assert polling({}) == []  # the broker's own default
    requests_only = {"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}}
    assert polling({"resources": requests_only}) == []
    limited = {"limits": {"cpu": 2}}
    assert polling({"resources": limited}) == ["socket.idle.poll.us=0"]
    chosen = {"resources": limited, "config": {"socket.idle.poll.us": 100}}
    assert polling(chosen) == ["socket.idle.poll.us=100"]


def test_an_ephemeral_ensemble_keeps_its_data_in_empty_dirs():
    spec = cluster({**VOLUMES, "zookeeper": {"ephemeral": True}})
    built = zookeeper.zookeeper_statefulset(spec, "i")
    assert "volumeClaimTemplates" not in built["spec"]
    volumes = built["spec"]["template"]["spec"]["volumes"]
    assert {"name": "data", "emptyDir": {}} in volumes


def test_a_topic_is_ours_by_its_id_or_by_the_claim_made_before_creating_it():
    from tidelog_operator.topic.plan import Actual, Desired, plan_topic

    actual = Actual("id-1", 3, 2, {})
    desired = Desired("t", 3, 2, {}, owned_id=None)
    assert plan_topic(desired, None).create
    assert plan_topic(desired, actual).refused[0] == "NotOwned"
    claimed = Desired("t", 3, 2, {}, owned_id=None, claimed=True)
    assert plan_topic(claimed, actual).nothing_to_do
    assert plan_topic(Desired("t", 3, 2, {}, owned_id="id-1"), actual).nothing_to_do
    recreated = Desired("t", 3, 2, {}, owned_id="id-0", claimed=True)
    assert plan_topic(recreated, actual).refused[0] == "NotOwned"


def test_rack_aware_brokers_get_an_account_bound_to_read_their_nodes():
    spec = cluster({**VOLUMES, "brokers": {"rack": {"topologyKey": "zone"}}})
    pod = brokers.statefulset(spec, "h")["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "events-broker"
    assert brokers.service_account(spec)["metadata"]["name"] == "events-broker"
    binding = brokers.node_reader_binding(spec, "tl-node-reader")
    assert binding["metadata"]["name"] == "tidelog-prod-events-broker-nodes"
    assert binding["roleRef"]["name"] == "tl-node-reader"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "events-broker", "namespace": "prod"}
    ]
    assert brokers.node_reader_binding(cluster(VOLUMES), "tl-node-reader") is None


def test_brokers_and_zookeeper_servers_prefer_nodes_of_their_own():
    spec = cluster(VOLUMES)
    for built in (brokers.statefulset(spec, "h"), zookeeper.zookeeper_statefulset(spec, "i")):
        pod = built["spec"]["template"]["spec"]
        (term,) = pod["affinity"]["podAntiAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"
        ]
        assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
        assert (
            term["podAffinityTerm"]["labelSelector"]["matchLabels"]
            == built["spec"]["selector"]["matchLabels"]
        )


def test_the_pod_templates_carry_the_cas_their_bundles_trust():
    spec = cluster(VOLUMES)
    markers = ("cluster=2+1,clients=0", "cluster=2+1")
    built = {
        o["metadata"]["name"]: o["spec"]["template"]["metadata"]["annotations"]
        for o in desired_children(spec, ca_trust=markers).objects
        if o["kind"] == "StatefulSet"
    }
    assert built["events-broker"]["tidelog.dev/ca-trust"] == "cluster=2+1,clients=0"
    assert built["events-zookeeper"]["tidelog.dev/ca-trust"] == "cluster=2+1"
    # a marker that changes changes the templates (their pods roll); none given, none set
    again = desired_children(spec, ca_trust=("cluster=2,clients=0", "cluster=2")).objects
    assert [o["spec"]["template"] for o in again if o["kind"] == "StatefulSet"] != [
        o["spec"]["template"]
        for o in desired_children(spec, ca_trust=markers).objects
        if o["kind"] == "StatefulSet"
    ]
    assert all(
        "tidelog.dev/ca-trust" not in o["spec"]["template"]["metadata"]["annotations"]
        for o in desired_children(spec).objects
        if o["kind"] == "StatefulSet"
    )
