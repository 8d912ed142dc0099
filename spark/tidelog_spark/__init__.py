"""tidelog's reference data pipeline on Spark (DESIGN §4).

A tick stream keyed by symbol (:mod:`.ticks`) goes through Spark's own Kafka source into
one-minute OHLC bars per symbol with an event-time watermark (:mod:`.bars`), which go to
the compacted topic ``ohlc-1m`` and to Parquet partitioned by date (:mod:`.pipeline`).
The job commits the offsets it has processed to its consumer group (:mod:`.offsets`), so
every Kafka tool shows its lag. :mod:`.session` puts the Kafka connector's jars, fetched
from Maven Central by ``make spark-libs``, on Spark's classpath.
"""
