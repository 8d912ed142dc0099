"""What BrokerConfig refuses at load time, with Kafka's reasons."""

from __future__ import annotations

from pathlib import Path

import pytest

from tidelog.server.config import BrokerConfig, ConfigError


def load(tmp_path: Path, *overrides: str) -> BrokerConfig:
    path = tmp_path / "server.properties"
    path.write_text("zookeeper.connect=127.0.0.1:2181\n")
    return BrokerConfig.load(path, list(overrides))


@pytest.mark.parametrize("host", ["0.0.0.0", "[::]"])
def test_a_meta_address_is_never_advertised(tmp_path: Path, host: str) -> None:
    # Advertised because advertised.listeners is unset: clients could not connect to it.
    with pytest.raises(ConfigError, match="meta-address"):
        load(tmp_path, f"listeners=PLAINTEXT://{host}:9092")
    with pytest.raises(ConfigError, match="meta-address"):
        load(tmp_path, f"advertised.listeners=PLAINTEXT://{host}:9092")


def test_every_interface_with_a_routable_advertised_address_is_fine(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        "listeners=PLAINTEXT://0.0.0.0:9092",
        "advertised.listeners=PLAINTEXT://broker-1:9092",
    )
    assert config.advertised_listeners == [("PLAINTEXT", "broker-1", 9092)]
    # An empty host binds every interface and advertises the machine's name.
    assert load(tmp_path, "listeners=PLAINTEXT://:9092").advertised_listeners == [
        ("PLAINTEXT", "", 9092)
    ]


def test_stale_draining_entries_are_told_apart_and_left_out(tmp_path: Path) -> None:
    kept, gone = tmp_path / "data-1", tmp_path / "data-0"
    config = BrokerConfig({"log.dirs": str(kept), "zookeeper.connect": "zk:2181"})
    dynamic = {"log.dirs.draining": f"{gone},{kept}", "leader.replication.throttled.rate": "9"}
    pruned, stale = config.without_stale_draining(dynamic)
    assert stale == [str(gone)]
    assert pruned == {"log.dirs.draining": str(kept), "leader.replication.throttled.rate": "9"}
    assert config.with_dynamic({}, pruned)["log.dirs.draining"] == [str(kept)]
    with pytest.raises(ConfigError, match="is not one of log.dirs"):
        config.with_dynamic({}, dynamic)
    assert config.without_stale_draining({"num.io.threads": "4"}) == ({"num.io.threads": "4"}, [])


def test_the_idle_poll_window_defaults_to_500_us_and_refuses_a_negative_value(
    tmp_path: Path,
) -> None:
    assert load(tmp_path)["socket.idle.poll.us"] == 500
    assert load(tmp_path, "socket.idle.poll.us=0")["socket.idle.poll.us"] == 0
    with pytest.raises(ConfigError, match="Invalid value -1 for configuration socket.idle.poll.us"):
        load(tmp_path, "socket.idle.poll.us=-1")


def test_flush_ms_defaults_to_the_flushers_interval_as_in_kafka():
    base = {"zookeeper.connect": "zk:2181"}
    assert BrokerConfig(base).log_config().flush_ms == 2**63 - 1
    flusher = {**base, "log.flush.scheduler.interval.ms": "1000"}
    assert BrokerConfig(flusher).log_config().flush_ms == 1000
    assert BrokerConfig({**flusher, "log.flush.interval.ms": "50"}).log_config().flush_ms == 50
