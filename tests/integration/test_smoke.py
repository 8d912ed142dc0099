"""The broker process starts, answers real clients and stops cleanly."""

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic


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
