"""A listener's SASL settings changed at run time as on Kafka: ``kafka-configs.sh
--entity-type brokers --alter`` of ``listener.name.<l>.plain.sasl.jaas.config`` (a new
PLAIN user) and of ``listener.name.<l>.sasl.enabled.mechanisms`` (a mechanism added)
take effect for new connections, without a restart."""

from __future__ import annotations

from integration.broker_process import BrokerProcess, free_port
from integration.sasl_setup import PLAIN_MODULE, create_scram_user, jaas, logs_in
from kafka_reference.tools import run_kafka_tool
from waiting import wait_until

PREFIX = "listener.name.sasl_plaintext."


def test_jaas_users_and_mechanisms_change_without_a_restart(tmp_path, zk_chroot) -> None:
    sasl = free_port()
    broker = BrokerProcess(tmp_path / "broker", zk_chroot)
    with broker.config_path.open("a") as config:
        config.write(
            f"listeners=PLAINTEXT://127.0.0.1:{broker.port},SASL_PLAINTEXT://127.0.0.1:{sasl}\n"
            "inter.broker.listener.name=PLAINTEXT\npassword.encoder.secret=encoder-secret\n"
            f"{PREFIX}sasl.enabled.mechanisms=PLAIN\n"
            f"{PREFIX}plain.sasl.jaas.config={jaas(PLAIN_MODULE, 'a', 'a', user_alice='a-pw')}\n"
            f"{PREFIX}scram-sha-256.sasl.jaas.config={jaas(PLAIN_MODULE, 'a', 'a')}\n"
        )
    broker.start()
    try:
        create_scram_user(broker.port, "bob", "bob-pw")
        assert logs_in(sasl, "PLAIN", "alice", "a-pw")
        assert not logs_in(sasl, "PLAIN", "carol", "c-pw")
        assert not logs_in(sasl, "SCRAM-SHA-256", "bob", "bob-pw")

        entry = jaas(PLAIN_MODULE, "a", "a", user_alice="a-pw", user_carol="c-pw")
        changes = tmp_path / "changes.properties"  # a JAAS entry holds "=": from a file
        changes.write_text(
            f"{PREFIX}plain.sasl.jaas.config={entry}\n"
            f"{PREFIX}sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256\n"
        )
        result = run_kafka_tool(
            "kafka-configs",
            *("--bootstrap-server", broker.bootstrap, "--entity-type", "brokers"),
            *("--entity-name", "1", "--alter", "--add-config-file", str(changes)),
        )
        assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
        wait_until(lambda: logs_in(sasl, "PLAIN", "carol", "c-pw"), "carol logs in with PLAIN")
        assert logs_in(sasl, "SCRAM-SHA-256", "bob", "bob-pw")
        assert logs_in(sasl, "PLAIN", "alice", "a-pw")
    finally:
        assert broker.stop() == 0, broker.log()[-3000:]
