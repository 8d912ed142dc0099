"""KIP-951 leader hints from the metadata a broker has: the leader and epoch it knows,
the endpoints of the live ones on the request's listener, and -1 for what it does not
know (the cluster-level behaviour is in tests/integration/test_controller_cluster.py)."""

import uuid

import pytest

from tidelog.controller.zk_data import BrokerRegistration
from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.server.leader_hints import LeaderHints
from tidelog.server.metadata_cache import MetadataCache, PartitionMetadata


def cluster_view() -> MetadataCache:
    """Brokers 1 (rack a) and 2 alive on listeners INTERNAL and EXTERNAL; partition 0
    led by 2 at epoch 7, partition 1 by broker 3, which is not alive."""
    cache = MetadataCache("cluster")
    cache.update_brokers(
        {
            broker_id: BrokerRegistration(
                broker_id,
                (
                    ("INTERNAL", f"10.0.0.{broker_id}", 9091),
                    ("EXTERNAL", "node", 30000 + broker_id),
                ),
                rack,
            )
            for broker_id, rack in ((1, "a"), (2, None))
        }
    )
    topic_id = uuid.uuid4()
    cache.update_partition("t", topic_id, PartitionMetadata(0, 2, 7, [2, 1], [2, 1]))
    cache.update_partition("t", topic_id, PartitionMetadata(1, 3, 4, [3, 1], [3]))
    return cache


@pytest.mark.parametrize(("api", "version"), [(ApiKey.PRODUCE, 10), (ApiKey.FETCH, 16)])
def test_each_leader_is_named_with_its_epoch_and_the_live_ones_with_their_address(api, version):
    response = response_class(api)
    hints = LeaderHints(cluster_view(), "EXTERNAL", api, version)
    assert hints.current_leader("t", 0) == response.LeaderIdAndEpoch(leader_id=2, leader_epoch=7)
    assert hints.current_leader("t", 1) == response.LeaderIdAndEpoch(leader_id=3, leader_epoch=4)
    assert hints.current_leader("t", 9) == response.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
    assert hints.current_leader("gone", 0).leader_id == -1
    hints.current_leader("t", 0)  # named twice, listed once
    assert hints.node_endpoints() == [
        response.NodeEndpoint(node_id=2, host="node", port=30002, rack=None)
    ]


def test_the_address_is_the_one_of_the_requests_listener_and_carries_the_rack():
    cache = cluster_view()
    cache.update_partition("u", uuid.uuid4(), PartitionMetadata(0, 1, 0, [1], [1]))
    response = response_class(ApiKey.PRODUCE)
    hints = LeaderHints(cache, "INTERNAL", ApiKey.PRODUCE, 11)
    hints.current_leader("u", 0)
    hints.current_leader("t", 0)
    assert hints.node_endpoints() == [
        response.NodeEndpoint(node_id=1, host="10.0.0.1", port=9091, rack="a"),
        response.NodeEndpoint(node_id=2, host="10.0.0.2", port=9091, rack=None),
    ]
    assert LeaderHints(cache, "INTERNAL", ApiKey.PRODUCE, 11).node_endpoints() == []


@pytest.mark.parametrize(
    ("api", "version", "error", "named"),
    [
        (ApiKey.PRODUCE, 10, ErrorCode.NOT_LEADER_OR_FOLLOWER, True),
        (ApiKey.PRODUCE, 9, ErrorCode.NOT_LEADER_OR_FOLLOWER, False),
        (ApiKey.PRODUCE, 11, ErrorCode.FENCED_LEADER_EPOCH, False),
        (ApiKey.FETCH, 16, ErrorCode.FENCED_LEADER_EPOCH, True),
        (ApiKey.FETCH, 17, ErrorCode.NOT_LEADER_OR_FOLLOWER, True),
        (ApiKey.FETCH, 15, ErrorCode.NOT_LEADER_OR_FOLLOWER, False),
        (ApiKey.FETCH, 17, ErrorCode.NONE, False),
    ],
)
def test_only_the_errors_that_send_a_client_away_name_the_leader_and_only_from_kip_951(
    api, version, error, named
):
    """Produce names the leader from v10 on NOT_LEADER_OR_FOLLOWER, Fetch from v16 on
    that and FENCED_LEADER_EPOCH, as Kafka."""
    response = response_class(api)
    hints = LeaderHints(cluster_view(), "EXTERNAL", api, version)
    if api == ApiKey.PRODUCE:
        partition = response.PartitionProduceResponse(index=0, error_code=error)
    else:
        partition = response.PartitionData(partition_index=0, error_code=error)
    hints.name_leader(partition, "t", 0)
    assert (partition.current_leader.leader_id == 2) is named
    assert bool(hints.node_endpoints()) is named
