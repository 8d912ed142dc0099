"""The SASL_SSL cluster that the replication and reassignment tests also run on is what
they take it for: each broker registers a SASL_SSL endpoint and nothing else (so the
controller's requests and the replica fetchers use it too), a client without TLS gets
no answer, a client with TLS but without the cluster's password cannot log in, and the
ACL authorizer is on (the tests' user is a super user)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from integration.cluster import Cluster
from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.sasl_client import SaslAuthenticationFailed

pytestmark = pytest.mark.timeout(120)


def test_a_sasl_ssl_cluster_has_no_other_way_in(tmp_path, zk_chroot):
    with Cluster(tmp_path, zk_chroot, size=2, security="sasl_ssl") as cluster:
        for broker_id, broker in cluster.brokers.items():
            registration = json.loads(cluster.zk.get(f"/brokers/ids/{broker_id}")[0])
            assert registration["endpoints"] == [f"SASL_SSL://127.0.0.1:{broker.port}"]

        port = cluster.brokers[1].port
        with pytest.raises(ConnectionError):
            BrokerConnection("127.0.0.1", port, timeout=10)
        wrong = replace(cluster.admin_security(), sasl_password="not-the-password")
        with pytest.raises(SaslAuthenticationFailed):
            BrokerConnection("127.0.0.1", port, timeout=10, security=wrong)

        assert sorted(b.node_id for b in cluster.metadata(1, []).brokers) == [1, 2]
        with cluster.connect(1) as connection:
            acls = connection.request(
                ApiKey.DESCRIBE_ACLS,
                3,
                {
                    "resource_type_filter": 1,  # any
                    "pattern_type_filter": 1,  # any
                    "operation": 1,  # any
                    "permission_type": 1,  # any
                },
            )
        assert acls.error_code == ErrorCode.NONE, acls.error_message
