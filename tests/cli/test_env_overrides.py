"""``TIDELOG_CONFIG_<NAME>`` variables set broker properties as Apache Kafka's image does
(``_`` → ``.``, ``__`` → ``_``, ``___`` → ``-``), and ``tidelog-server`` layers them
between its file and its ``--override`` arguments."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tidelog.cli import server as server_cli
from tidelog.server.config import BrokerConfig, ConfigError
from tidelog.server.env_overrides import (
    PREFIX,
    env_overrides,
    load_config,
    property_key,
    variable_name,
)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("BROKER_ID", "broker.id"),
        ("ADVERTISED_LISTENERS", "advertised.listeners"),
        ("LISTENER_SECURITY_PROTOCOL_MAP", "listener.security.protocol.map"),
        ("LOG_DIRS", "log.dirs"),
        ("LOG_CLEANER_DEDUPE_BUFFER_SIZE", "log.cleaner.dedupe.buffer.size"),
        ("OFFSETS_TOPIC_REPLICATION_FACTOR", "offsets.topic.replication.factor"),
        ("SOME__UNDERSCORED_KEY", "some_underscored.key"),
        ("LISTENER_NAME_INTERNAL_SSL___KEYSTORE", "listener.name.internal.ssl-keystore"),
        ("A_B_C", "a.b.c"),  # single letters too (Kafka's own regex skips every other one)
        ("X___Y__Z_W", "x-y_z.w"),
        ("broker_id", "broker.id"),
    ],
)
def test_names_map_to_property_keys(name: str, key: str) -> None:
    assert property_key(name) == key
    if name.isupper():
        assert variable_name(key) == PREFIX + name


@pytest.mark.parametrize("name", ["", "LOG____DIRS"])
def test_names_that_stand_for_no_key_are_errors(name: str) -> None:
    with pytest.raises(ConfigError, match="TIDELOG_CONFIG_"):
        property_key(name)


def test_only_prefixed_variables_count_and_values_stay_as_they_are() -> None:
    environ = {
        "TIDELOG_CONFIG_BROKER_ID": "3",
        "TIDELOG_CONFIG_ADVERTISED_LISTENERS": "PLAINTEXT://broker-3.svc:9092",
        "TIDELOG_ZOOKEEPER_LIBS": "/opt/zookeeper/libs",
        "TIDELOG_CONFIGX": "no",
        "PATH": "/usr/bin",
    }
    assert env_overrides(environ) == {
        "advertised.listeners": "PLAINTEXT://broker-3.svc:9092",
        "broker.id": "3",
    }


def test_two_variables_for_one_key_are_an_error() -> None:
    environ = {"TIDELOG_CONFIG_BROKER_ID": "1", "TIDELOG_CONFIG_broker_id": "2"}
    with pytest.raises(ConfigError, match="both set broker.id"):
        env_overrides(environ)


def test_values_with_equals_signs_survive_the_config_loader(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("zookeeper.connect=zk:2181\n")
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b=c";'
    environ = {"TIDELOG_CONFIG_SASL_JAAS_CONFIG": jaas}
    config, from_environment = load_config(str(path), [], environ)
    assert config["sasl.jaas.config"] == jaas
    assert from_environment == ["sasl.jaas.config"]


@pytest.fixture
def started_with(monkeypatch: pytest.MonkeyPatch) -> list[BrokerConfig]:
    """The configs ``tidelog-server``'s main would start brokers with (none is started)."""
    started: list[BrokerConfig] = []

    async def record(config: BrokerConfig) -> None:
        started.append(config)

    monkeypatch.setattr(server_cli, "_run", record)
    for variable in [v for v in os.environ if v.startswith("TIDELOG_CONFIG_")]:
        monkeypatch.delenv(variable)
    return started


def test_server_takes_file_then_environment_then_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started_with: list[BrokerConfig]
) -> None:
    path = tmp_path / "server.properties"
    path.write_text(
        "zookeeper.connect=zk:2181\nbroker.id=1\nnum.partitions=4\nlog.dirs=/data/file\n"
    )
    monkeypatch.setenv("TIDELOG_CONFIG_BROKER_ID", "2")
    monkeypatch.setenv("TIDELOG_CONFIG_LOG_DIRS", "/data/env")
    code = server_cli.main([str(path), "--override", "log.dirs=/data/argument"])
    assert code == 0
    (config,) = started_with
    assert config["num.partitions"] == 4  # the file
    assert config.broker_id == 2  # the environment over the file
    assert config["log.dirs"] == ["/data/argument"]  # --override over the environment


def test_server_reports_a_bad_variable_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    started_with: list[BrokerConfig],
) -> None:
    path = tmp_path / "server.properties"
    path.write_text("zookeeper.connect=zk:2181\n")
    monkeypatch.setenv("TIDELOG_CONFIG_BROKER_ID", "not-a-number")
    assert server_cli.main([str(path)]) == 1
    assert started_with == []
    error = capsys.readouterr().err
    assert error.startswith("tidelog-server: ") and error.count("\n") == 1
    assert "broker.id" in error
