"""S15's pure parts (``bench/secured.py``): the settings both brokers and all clients get,
the ACLs that crowd the authorizer, and the report's lines on S15's goals."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tidelog.security.certificates import CertificateAuthority
from tidelog.security.client_security import ClientSecurity
from tidelog.server.config import BrokerConfig

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def secured(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module("secured")


def test_the_brokers_settings_are_a_config_tidelog_accepts(secured, tmp_path):
    settings = secured.broker_security_settings(9092, 9093, tmp_path / "broker.p12", "secret")
    config = BrokerConfig(
        {"broker.id": "1", "log.dirs": str(tmp_path), "zookeeper.connect": "127.0.0.1:2181"}
        | settings
    )
    assert config["sasl.enabled.mechanisms"] == ["SCRAM-SHA-512"]
    assert config["authorizer.class.name"] == "kafka.security.authorizer.AclAuthorizer"
    assert [(name, port) for name, _, port in config.listeners] == [
        ("PLAINTEXT", 9092),
        ("SASL_SSL", 9093),
    ]


def test_the_clients_properties_log_in_with_scram_over_tls(secured, tmp_path):
    ca_file = tmp_path / "ca.pem"
    ca_file.write_bytes(CertificateAuthority().certificate_pem)
    security = ClientSecurity.from_properties(secured.client_properties("bench", "pw", ca_file))
    assert (security.protocol, security.sasl_mechanism) == ("SASL_SSL", "SCRAM-SHA-512")
    assert (security.sasl_username, security.sasl_password) == ("bench", "pw")
    assert security.uses_tls


def test_the_crowd_of_acls_grants_the_bench_user_nothing_on_its_topic(secured):
    acls = secured.crowd_acls("s15-acl", 10_000)
    assert len(set(acls)) == 10_000
    on_topic = [acl for acl in acls if acl.name == "s15-acl"]
    assert len(on_topic) == 5_000
    assert all(acl.principal != f"User:{secured.BENCH_USER}" for acl in on_topic)
    assert {acl.operation for acl in acls} == {secured.AclOperation.READ}
    assert acls == secured.crowd_acls("s15-acl", 10_000)  # the same for both systems


def _rows(metric: str, kafka: float, tidelog: float, case: str = "produce 1 KiB none") -> list:
    return [
        dict(
            system=system,
            session=n,
            scenario="S15",
            case=case,
            tool="loadgen",
            metric=metric,
            value=value,
            unit="×",
        )
        for n, (system, value) in enumerate((("kafka", kafka), ("tidelog", tidelog)))
    ]


def test_the_goals_name_the_figures_behind_kafka_and_each_authorizer_cost(secured, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    report = importlib.import_module("report")
    rows = (
        _rows("throughput", 10.0, 12.0, "produce 1 KiB none, SASL_SSL")
        + _rows("throughput", 50.0, 40.0, "consume 1 KiB lz4, SASL_SSL")
        + _rows(secured.ACL_COST_METRIC, 0.99, 0.90)
        + [
            dict(
                system="kafka",
                session=0,
                scenario="S1",
                case="1024B none",
                tool="loadgen",
                metric="throughput",
                value=1.0,
                unit="MB/s",
            )
        ]
    )
    lines = secured.goal_lines(report.summarise(rows))
    assert lines[0] == (
        "- tidelog / Kafka at least 1.0: 1 of 3 S15 figures: consume 1 KiB lz4, SASL_SSL, "
        f"loadgen, throughput 0.80×; produce 1 KiB none, loadgen, {secured.ACL_COST_METRIC} 0.91×"
    )
    assert lines[1:] == [
        "- kafka: the authorizer's cost on produce 1.0% (goal under 5%: met)",
        "- tidelog: the authorizer's cost on produce 10.0% (goal under 5%: missed)",
    ]


def test_a_run_without_s15_has_no_goal_lines(secured):
    assert secured.goal_lines([]) == []
