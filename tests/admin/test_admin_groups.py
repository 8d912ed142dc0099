"""The consumer-group calls of ``AdminClient`` against a scripted broker: every request
encodes in every version of its API (the codec is strict about fields a version lacks),
responses are read in every version, and coordinator and leadership errors are retried
as Kafka's admin client retries them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tidelog.admin import AdminClient, AdminError
from tidelog.admin import groups as groups_module
from tidelog.admin.group_offsets import OffsetAndMetadata
from tidelog.admin.groups import TopicPartition
from tidelog.protocol import (
    ApiKey,
    RequestHeader,
    api_specs,
    decode_response,
    encode_request,
    encode_response_chunks,
    response_class,
)
from tidelog.protocol.consumer_protocol import encode_assignment, encode_subscription
from tidelog.protocol.errors import ErrorCode

BROKERS = {1: ("b1", 9001), 2: ("b2", 9002), 3: ("b3", 9003)}


class ScriptedCluster:
    """Answers requests with ``handlers[api_key](address, version, body) -> dict``; every
    request is encoded and every response encoded and decoded in the version used."""

    def __init__(self, versions: dict[ApiKey, int] | None = None):
        self.versions = versions or {}
        self.handlers: dict[ApiKey, Callable] = {ApiKey.METADATA: self.metadata}
        self.calls: list[tuple[ApiKey, tuple[str, int] | None, int, dict]] = []
        self.leaders = {("t", 0): 1, ("t", 1): 2}

    def metadata(self, address, version, body):
        return {
            "brokers": [{"node_id": n, "host": h, "port": p} for n, (h, p) in BROKERS.items()],
            "controller_id": 1,
            "topics": [
                {
                    "name": "t",
                    "error_code": 0,
                    "partitions": [
                        {"partition_index": p, "leader_id": leader, "error_code": 0}
                        for (_, p), leader in sorted(self.leaders.items())
                    ],
                }
            ]
            if body["topics"]
            else [],
        }

    def request(self, address, api_key: ApiKey, version: int, body: dict):
        header = RequestHeader(
            request_api_key=int(api_key),
            request_api_version=version,
            correlation_id=1,
            client_id="test",
        )
        encode_request(header, body)  # raises on a field the version lacks
        self.calls.append((api_key, address, version, body))
        answer = response_class(api_key).from_dict(self.handlers[api_key](address, version, body))
        frame = b"".join(encode_response_chunks(1, api_key, version, answer, strict=False)[1:])
        return decode_response(frame, api_key, version)[1]

    def count(self, api_key: ApiKey) -> int:
        return sum(1 for c in self.calls if c[0] == api_key)


class FakeConnection:
    def __init__(self, cluster: ScriptedCluster, address):
        self.cluster = cluster
        self.address = address

    def version(self, api_key: ApiKey) -> int:
        return self.cluster.versions.get(api_key, api_specs()[api_key].max_version)

    def request(self, api_key, version, body):
        version = self.version(api_key) if version is None else version
        return self.cluster.request(self.address, api_key, version, body)

    def __enter__(self):
        return self

    def __exit__(self, *_):
        pass


class ScriptedAdmin(AdminClient):
    def __init__(self, cluster: ScriptedCluster, timeout: float = 2.0):
        super().__init__("b1:9001", timeout=timeout)
        self.cluster = cluster

    def _connect(self, address=None):
        return FakeConnection(self.cluster, address)

    def _connect_to(self, host, port):
        return FakeConnection(self.cluster, (host, port))


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    monkeypatch.setattr(groups_module, "_BACKOFF", 0.001)
    monkeypatch.setattr(groups_module, "_MAX_BACKOFF", 0.001)


def coordinator_handler(node_for: Callable[[str], int], errors: list[int] | None = None):
    errors = list(errors or [])

    def handle(address, version, body):
        keys = body["coordinator_keys"] if version >= 4 else [body["key"]]
        error = errors.pop(0) if errors else 0
        node = node_for(keys[0])
        host, port = BROKERS[node]
        found = {"node_id": node, "host": host, "port": port, "error_code": error}
        return {"coordinators": [{"key": keys[0], **found}]} if version >= 4 else found

    return handle


def versions_of(api_key: ApiKey, low: int = 0) -> list[int]:
    spec = api_specs()[api_key]
    return list(range(max(low, spec.min_version), spec.max_version + 1))


@pytest.mark.parametrize("version", versions_of(ApiKey.FIND_COORDINATOR))
def test_find_coordinator_in_every_version_retries_until_there_is_one(version):
    cluster = ScriptedCluster({ApiKey.FIND_COORDINATOR: version})
    cluster.handlers[ApiKey.FIND_COORDINATOR] = coordinator_handler(
        lambda key: 2, [ErrorCode.COORDINATOR_NOT_AVAILABLE] * 2
    )
    node = ScriptedAdmin(cluster).find_coordinator("g")
    assert (node.node_id, node.address) == (2, BROKERS[2])
    assert cluster.count(ApiKey.FIND_COORDINATOR) == 3


def test_find_coordinator_gives_up_at_the_timeout():
    cluster = ScriptedCluster()
    cluster.handlers[ApiKey.FIND_COORDINATOR] = coordinator_handler(
        lambda key: 2, [ErrorCode.COORDINATOR_NOT_AVAILABLE] * 10_000
    )
    with pytest.raises(AdminError) as failed:
        ScriptedAdmin(cluster, timeout=0.05).find_coordinator("g")
    assert failed.value.code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    cluster.handlers[ApiKey.FIND_COORDINATOR] = coordinator_handler(
        lambda key: 2, [ErrorCode.GROUP_AUTHORIZATION_FAILED]
    )
    with pytest.raises(AdminError) as failed:
        ScriptedAdmin(cluster).find_coordinator("g")
    assert failed.value.code == ErrorCode.GROUP_AUTHORIZATION_FAILED


def described(group: str, state: str = "Stable", error: int = 0, protocol_type="consumer"):
    member = {
        "member_id": "m-1",
        "group_instance_id": None,
        "client_id": "c",
        "client_host": "/10.0.0.1",
        "member_metadata": encode_subscription(["t"], version=1),
        "member_assignment": encode_assignment([("t", 1), ("t", 0)], version=0),
    }
    return {
        "error_code": error,
        "group_id": group,
        "group_state": state,
        "protocol_type": protocol_type,
        "protocol_data": "range",
        "members": [member] if state == "Stable" else [],
    }


@pytest.mark.parametrize("version", versions_of(ApiKey.DESCRIBE_GROUPS))
def test_describe_groups_re_finds_a_moved_coordinator(version):
    cluster = ScriptedCluster({ApiKey.DESCRIBE_GROUPS: version})
    moves = iter([2, 3, 3, 3])
    cluster.handlers[ApiKey.FIND_COORDINATOR] = coordinator_handler(lambda key: next(moves))
    answers = [
        ErrorCode.NOT_COORDINATOR,  # asked at broker 2: it moved to 3
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,  # 3 is loading: ask 3 again
        ErrorCode.NONE,
    ]

    def describe(address, version, body):
        (group,) = body["groups"]
        return {"groups": [described(group, error=answers.pop(0))]}

    cluster.handlers[ApiKey.DESCRIBE_GROUPS] = describe
    (description,) = ScriptedAdmin(cluster).describe_groups(["g"]).values()
    asked = [c[1] for c in cluster.calls if c[0] == ApiKey.DESCRIBE_GROUPS]
    assert asked == [BROKERS[2], BROKERS[3], BROKERS[3]]
    assert cluster.count(ApiKey.FIND_COORDINATOR) == 2
    assert description.coordinator.node_id == 3
    assert (description.state, description.protocol) == ("Stable", "range")
    (member,) = description.members
    assert member.assignment == (TopicPartition("t", 1), TopicPartition("t", 0))
    assert member.subscription == ("t",)
    assert member.group_instance_id is None
    assert (member.client_id, member.client_host) == ("c", "/10.0.0.1")


def test_describe_groups_unknown_and_foreign_groups():
    cluster = ScriptedCluster()
    cluster.handlers[ApiKey.FIND_COORDINATOR] = coordinator_handler(lambda key: 1)
    cluster.handlers[ApiKey.DESCRIBE_GROUPS] = lambda a, v, body: {
        "groups": [
            {
                "gone": described("gone", error=ErrorCode.GROUP_ID_NOT_FOUND),
                "dead": described("dead", state="Dead"),
                "connect": described("connect", protocol_type="connect"),
            }[body["groups"][0]]
        ]
    }
    out = ScriptedAdmin(cluster).describe_groups(["gone", "dead", "connect"])
    assert [(g, d.state, d.members) for g, d in out.items()][:2] == [
        ("gone", "Dead", ()),
        ("dead", "Dead", ()),
    ]
    # Another protocol's bytes are not decoded.
    assert not out["connect"].is_consumer_group
    assert out["connect"].members[0].assignment == ()


@pytest.mark.parametrize("version", versions_of(ApiKey.LIST_GROUPS))
def test_list_groups_asks_every_broker(version):
    cluster = ScriptedCluster({ApiKey.LIST_GROUPS: version})
    by_broker = {
        BROKERS[1]: [("a", "consumer", "Stable")],
        BROKERS[2]: [("b", "", "Empty"), ("c", "connect", "Stable")],
        BROKERS[3]: [],
    }
    loading = {BROKERS[3]: 1}

    def list_groups(address, version, body):
        if loading.get(address):
            loading[address] -= 1
            return {"error_code": ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
        wanted = body.get("states_filter") or []
        return {
            "error_code": 0,
            "groups": [
                {"group_id": g, "protocol_type": t, "group_state": s, "group_type": "classic"}
                for g, t, s in by_broker[address]
                if not wanted or s in wanted
            ],
        }

    cluster.handlers[ApiKey.LIST_GROUPS] = list_groups
    cluster.handlers[ApiKey.FIND_COORDINATOR] = coordinator_handler(lambda key: 2)
    cluster.handlers[ApiKey.DESCRIBE_GROUPS] = lambda a, v, body: {
        "groups": [
            described(body["groups"][0], state={"b": "Empty"}.get(body["groups"][0], "Stable"))
        ]
    }
    admin = ScriptedAdmin(cluster)
    listed = admin.list_groups()
    assert [(g.group_id, g.is_consumer_group) for g in listed] == [
        ("a", True),
        ("b", True),
        ("c", False),
    ]
    # Every version gives the states (read with DescribeGroups before ListGroups v4).
    assert [g.state for g in listed] == ["Stable", "Empty", "Stable"]
    # A state filter works with every version (read with DescribeGroups before v4).
    assert [g.group_id for g in admin.list_groups(["EMPTY"])] == ["b"]
    with pytest.raises(ValueError, match="unknown group state"):
        admin.list_groups(["sleeping"])


@pytest.mark.parametrize("version", versions_of(ApiKey.OFFSET_FETCH, low=2))
def test_list_group_offsets_in_every_version(version):
    cluster = ScriptedCluster({ApiKey.OFFSET_FETCH: version})
    cluster.handlers[ApiKey.FIND_COORDINATOR] = coordinator_handler(lambda key: 1)
    attempts = [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NONE]

    def fetch(address, version, body):
        if version >= 8:
            (asked,) = body["groups"]
            assert (asked["group_id"], asked["topics"]) == ("g", None)
        else:
            assert (body["group_id"], body["topics"]) == ("g", None)
        partitions = [
            {
                "partition_index": 0,
                "committed_offset": 42,
                "committed_leader_epoch": 3,
                "metadata": "m",
                "error_code": 0,
            },
            {"partition_index": 1, "committed_offset": -1, "metadata": None, "error_code": 0},
        ]
        error = attempts.pop(0)
        if version >= 8:
            return {
                "groups": [
                    {
                        "group_id": "g",
                        "error_code": error,
                        "topics": [{"name": "t", "partitions": partitions}],
                    }
                ]
            }
        return {"error_code": error, "topics": [{"name": "t", "partitions": partitions}]}

    cluster.handlers[ApiKey.OFFSET_FETCH] = fetch
    offsets = ScriptedAdmin(cluster).list_group_offsets("g")
    epoch = 3 if version >= 5 else None
    assert offsets == {TopicPartition("t", 0): OffsetAndMetadata(42, epoch, "m")}


def test_list_group_offsets_of_some_partitions_with_version_1():
    cluster = ScriptedCluster({ApiKey.OFFSET_FETCH: 1})
    cluster.handlers[ApiKey.FIND_COORDINATOR] = coordinator_handler(lambda key: 1)
    cluster.handlers[ApiKey.OFFSET_FETCH] = lambda a, v, body: {
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partition_index": p, "committed_offset": 7, "error_code": 0}
                    for p in body["topics"][0]["partition_indexes"]
                ],
            }
        ]
    }
    admin = ScriptedAdmin(cluster)
    assert admin.list_group_offsets("g", [("t", 1)]) == {
        TopicPartition("t", 1): OffsetAndMetadata(7)
    }
    with pytest.raises(AdminError, match="up to version 1"):
        admin.list_group_offsets("g")


@pytest.mark.parametrize("version", versions_of(ApiKey.OFFSET_COMMIT, low=1))
def test_alter_group_offsets_commits_as_the_admin_client(version):
    cluster = ScriptedCluster({ApiKey.OFFSET_COMMIT: version})
    cluster.handlers[ApiKey.FIND_COORDINATOR] = coordinator_handler(lambda key: 1)
    errors = [ErrorCode.NOT_COORDINATOR, ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]

    def commit(address, version, body):
        assert (body["generation_id_or_member_epoch"], body["member_id"]) == (-1, "")
        error = errors.pop(0)
        return {
            "topics": [
                {
                    "name": t["name"],
                    "partitions": [
                        {"partition_index": p["partition_index"], "error_code": error}
                        for p in t["partitions"]
                    ],
                }
                for t in body["topics"]
            ]
        }

    cluster.handlers[ApiKey.OFFSET_COMMIT] = commit
    admin = ScriptedAdmin(cluster)
    admin.alter_group_offsets("g", {("t", 0): 5, ("u", 2): OffsetAndMetadata(9, 4, "x")})
    sent = [c[3] for c in cluster.calls if c[0] == ApiKey.OFFSET_COMMIT][-1]
    partitions = {
        (t["name"], p["partition_index"]): (p["committed_offset"], p.get("committed_leader_epoch"))
        for t in sent["topics"]
        for p in t["partitions"]
    }
    assert partitions == {("t", 0): (5, None), ("u", 2): (9, 4 if version >= 6 else None)}
    with pytest.raises(AdminError) as failed:
        admin.alter_group_offsets("g", {("t", 0): 1})
    assert failed.value.code == ErrorCode.UNKNOWN_MEMBER_ID
    assert "t-0" in str(failed.value)


def test_delete_groups_and_offsets():
    cluster = ScriptedCluster()
    cluster.handlers[ApiKey.FIND_COORDINATOR] = coordinator_handler(lambda key: 1)
    cluster.handlers[ApiKey.DELETE_GROUPS] = lambda a, v, body: {
        "results": [
            {"group_id": g, "error_code": {"busy": ErrorCode.NON_EMPTY_GROUP}.get(g, 0)}
            for g in body["groups_names"]
        ]
    }
    cluster.handlers[ApiKey.OFFSET_DELETE] = lambda a, v, body: {
        "error_code": ErrorCode.GROUP_ID_NOT_FOUND if body["group_id"] == "gone" else 0,
        "topics": [
            {
                "name": t["name"],
                "partitions": [
                    {"partition_index": p["partition_index"], "error_code": 0}
                    for p in t["partitions"]
                ],
            }
            for t in body["topics"]
        ],
    }
    admin = ScriptedAdmin(cluster)
    assert admin.delete_groups(["idle", "busy"]) == {
        "idle": ErrorCode.NONE,
        "busy": ErrorCode.NON_EMPTY_GROUP,
    }
    assert admin.delete_group_offsets("g", [("t", 1), ("t", 0)]) == {
        TopicPartition("t", 0): ErrorCode.NONE,
        TopicPartition("t", 1): ErrorCode.NONE,
    }
    with pytest.raises(AdminError) as failed:
        admin.delete_group_offsets("gone", [("t", 0)])
    assert failed.value.code == ErrorCode.GROUP_ID_NOT_FOUND


@pytest.mark.parametrize("version", versions_of(ApiKey.LIST_OFFSETS, low=1))
def test_list_offsets_asks_each_leader_and_follows_a_new_one(version):
    cluster = ScriptedCluster({ApiKey.LIST_OFFSETS: version})

    def list_offsets(address, version, body):
        out = []
        for t in body["topics"]:
            partitions = []
            for p in t["partitions"]:
                tp = (t["name"], p["partition_index"])
                if BROKERS[cluster.leaders[tp]] != address:
                    error, offset = ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
                elif tp == ("t", 1) and cluster.leaders[tp] == 2:
                    # Broker 2 hands t-1 over to broker 3 as it is asked.
                    cluster.leaders[tp] = 3
                    error, offset = ErrorCode.NOT_LEADER_OR_FOLLOWER, -1
                else:
                    error, offset = 0, {-2: 0, -1: 100}.get(p["timestamp"], 50)
                partitions.append(
                    {
                        "partition_index": p["partition_index"],
                        "error_code": error,
                        "offset": offset,
                        "timestamp": -1,
                        "leader_epoch": 1,
                    }
                )
            out.append({"name": t["name"], "partitions": partitions})
        return {"topics": out}

    cluster.handlers[ApiKey.LIST_OFFSETS] = list_offsets
    admin = ScriptedAdmin(cluster)
    latest = admin.list_offsets([("t", 0), ("t", 1)], "latest")
    assert {tp: o.offset for tp, o in latest.items()} == {
        TopicPartition("t", 0): 100,
        TopicPartition("t", 1): 100,
    }
    asked = [c[1] for c in cluster.calls if c[0] == ApiKey.LIST_OFFSETS]
    assert asked == [BROKERS[1], BROKERS[2], BROKERS[3]]
    assert cluster.count(ApiKey.METADATA) == 2
    assert {tp: o.offset for tp, o in admin.list_offsets([("t", 1)], "earliest").items()} == {
        TopicPartition("t", 1): 0
    }
    assert admin.list_offsets([("t", 0)], 1234)[TopicPartition("t", 0)].offset == 50
    with pytest.raises(AdminError) as failed:
        admin.list_offsets([("t", 7)])
    assert failed.value.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    with pytest.raises(ValueError):
        admin.list_offsets([("t", 0)], "middle")
