"""One-minute OHLC bars per symbol from the tick records of Spark's Kafka source.

A bar covers ``[start, start + 1 minute)`` of event time for one symbol: open and close
are the prices of its first and last tick (by event time, then partition and offset, so
equal times still give one answer), high and low the extremes, volume the sum of sizes,
trades the count. With the watermark ``max event time - delay``, a bar is final, and
emitted once (append mode), when the watermark passes its end; ticks later than that are
dropped, as Structured Streaming does for late data.

Output record: key ``SYMBOL|yyyy-MM-ddTHH:mmZ`` (the window start), so a replay writes
the same key and the compacted topic keeps one bar per key; value the bar as JSON.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

TICK_SCHEMA = StructType(
    [
        StructField("symbol", StringType()),
        StructField("price", DoubleType()),
        StructField("size", LongType()),
        StructField("time", LongType()),
    ]
)
BAR_COLUMNS = ("symbol", "start", "end", "open", "high", "low", "close", "volume", "trades")
MINUTE_FORMAT = "yyyy-MM-dd'T'HH:mm'Z'"


def parse_ticks(records: DataFrame) -> DataFrame:
    """Ticks (symbol, price, size, event_time, partition, offset) from Kafka records;
    records that are not a tick (unparseable JSON, a missing field, a price or size not
    above zero) are left out."""
    tick = F.from_json(F.col("value").cast("string"), TICK_SCHEMA)
    parsed = records.select(tick.alias("tick"), "partition", "offset").select(
        "tick.symbol",
        "tick.price",
        "tick.size",
        F.timestamp_millis("tick.time").alias("event_time"),
        "partition",
        "offset",
    )
    return parsed.where(
        F.col("symbol").isNotNull()
        & F.col("event_time").isNotNull()
        & (F.col("price") > 0)
        & (F.col("size") > 0)
    )


def one_minute_bars(ticks: DataFrame, watermark_delay: str) -> DataFrame:
    """The bars of :func:`parse_ticks`'s ticks, as columns :data:`BAR_COLUMNS`."""
    order = F.struct("event_time", "partition", "offset")
    return (
        ticks.withWatermark("event_time", watermark_delay)
        .groupBy(F.window("event_time", "1 minute"), "symbol")
        .agg(
            F.min_by("price", order).alias("open"),
            F.max("price").alias("high"),
            F.min("price").alias("low"),
            F.max_by("price", order).alias("close"),
            F.sum("size").alias("volume"),
            F.count(F.lit(1)).alias("trades"),
        )
        .select(
            "symbol",
            F.col("window.start").alias("start"),
            F.col("window.end").alias("end"),
            *BAR_COLUMNS[3:],
        )
    )


def _minute(column: str) -> Column:
    return F.date_format(column, MINUTE_FORMAT)


def bar_records(bars: DataFrame) -> DataFrame:
    """The bars as Kafka records (key, value) for the sink."""
    value = F.to_json(
        F.struct(
            "symbol",
            _minute("start").alias("start"),
            _minute("end").alias("end"),
            *BAR_COLUMNS[3:],
        )
    )
    key = F.concat_ws("|", "symbol", _minute("start"))
    return bars.select(key.alias("key"), value.alias("value"))


def bar_rows(bars: DataFrame) -> DataFrame:
    """The bars as Parquet rows, with the column ``date`` (of the window start) that the
    files are partitioned by."""
    return bars.withColumn("date", F.to_date("start"))
