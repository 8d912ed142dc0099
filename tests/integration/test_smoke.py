"""The broker process starts, answers real clients and stops cleanly."""

import subprocess

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from integration.broker_process import TIDELOG_SERVER, BrokerProcess


def test_produce_and_consume_with_kafka_python(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([NewTopic("smoke", 2, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    sent = [producer.send("smoke", key=b"k%d" % i, value=b"v%d" % i) for i in range(200)]
    producer.flush()
    offsets = {(f.get().partition, f.get().offset) for f in sent}
    producer.close()
    assert len(offsets) == 200
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, consumer_timeout_ms=3000)
    consumer.assign([TopicPartition("smoke", 0), TopicPartition("smoke", 1)])
    consumer.seek_to_beginning()
    values = sorted(m.value for m in consumer)
    consumer.close()
    assert values == sorted(b"v%d" % i for i in range(200))


def test_a_second_broker_with_the_same_id_refuses_to_start(broker, tmp_path, zk_chroot):
    twin = BrokerProcess(tmp_path / "twin", zk_chroot, broker_id=broker.broker_id)
    result = subprocess.run(
        [str(TIDELOG_SERVER), str(twin.config_path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == (
        "tidelog-server: broker.id 1 is already registered in ZooKeeper by another running "
        "broker"
    )


def test_sigterm_writes_the_clean_shutdown_marker(broker):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    producer.send("auto-created", b"x").get(timeout=30)
    producer.close()
    assert broker.stop() == 0
    assert all((d / ".kafka_cleanshutdown").exists() for d in broker.log_dirs)
    assert "shut down cleanly" in broker.log()
    broker.start()  # and it comes back with the data
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, consumer_timeout_ms=3000)
    consumer.assign([TopicPartition("auto-created", 0)])
    consumer.seek_to_beginning()
    assert [m.value for m in consumer] == [b"x"]
    consumer.close()
