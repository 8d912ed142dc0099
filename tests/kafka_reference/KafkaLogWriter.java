/*
 * Writes one partition directory with Apache Kafka's own storage code, as a broker leader
 * would: records are built into batches by Kafka's MemoryRecordsBuilder and appended with
 * kafka.log.UnifiedLog#appendAsLeader, so offsets, segment rolling, the offset index and
 * the time index are all Kafka's own logic. Used only by tidelog's tests, as a reference.
 *
 * Run in Java's source-launcher mode with Apache Kafka's jars on the class path:
 *
 *     java -cp "<kafka-libs>/*" KafkaLogWriter.java < spec.json
 *
 * The spec (JSON on stdin; byte strings are base64, null stays null):
 *
 *     {"log_dir": "/tmp/x", "topic": "t", "partition": 0,
 *      "topic_id": null,                       // optional Kafka Uuid (base64, 22 chars)
 *      "config": {"segment.bytes": "1024", "index.interval.bytes": "128"},
 *      "leader_epoch": 0,
 *      "batches": [
 *        {"compression": "gzip",               // none, gzip, snappy, lz4, zstd
 *         "roll_before": false,                // optional: roll a new segment first
 *         "leader_epoch": 3,                   // optional: this batch's epoch (default above)
 *         "producer_id": -1, "producer_epoch": -1, "base_sequence": -1,   // optional
 *         "records": [{"timestamp": 1700000000000, "key": "a2V5", "value": null,
 *                      "headers": [{"key": "h", "value": "dg=="}]}]},
 *        {"raw": "AAAA..."}]}                   // or: ready-made batch bytes, appended as is
 *
 * Prints a JSON report on stdout: the partition directory, the first and last offset Kafka
 * assigned to each batch, the log start and end offsets and the base offsets of the segments.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import kafka.log.UnifiedLog;
import kafka.server.BrokerTopicStats;
import kafka.server.RequestLocal;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.MemoryRecordsBuilder;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.common.MetadataVersion;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.log.AppendOrigin;
import org.apache.kafka.storage.internals.log.LogAppendInfo;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;
import org.apache.kafka.storage.internals.log.LogOffsetsListener;
import org.apache.kafka.storage.internals.log.LogSegment;
import org.apache.kafka.storage.internals.log.ProducerStateManagerConfig;
import org.apache.kafka.storage.internals.log.VerificationGuard;

public class KafkaLogWriter {
    private static final Base64.Decoder B64 = Base64.getDecoder();

    public static void main(String[] args) {
        // Print failures here: the source launcher's own handler mangles short stack traces.
        try {
            run();
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
    }

    private static void run() throws Exception {
        ObjectMapper json = new ObjectMapper();
        JsonNode spec = json.readTree(System.in);

        File logDir = new File(spec.get("log_dir").asText());
        TopicPartition tp = new TopicPartition(spec.get("topic").asText(), spec.path("partition").asInt(0));
        File partitionDir = new File(logDir, tp.topic() + "-" + tp.partition());
        if (!partitionDir.mkdirs() && !partitionDir.isDirectory())
            throw new IllegalStateException("cannot create " + partitionDir);

        Map<String, Object> props = new HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = spec.path("config").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            props.put(e.getKey(), e.getValue().asText());
        }
        LogConfig config = new LogConfig(props);
        int leaderEpoch = spec.path("leader_epoch").asInt(0);
        scala.Option<Uuid> topicId = spec.hasNonNull("topic_id")
            ? scala.Option.apply(Uuid.fromString(spec.get("topic_id").asText()))
            : scala.Option.empty();

        KafkaScheduler scheduler = new KafkaScheduler(1);
        scheduler.startup();
        BrokerTopicStats stats = new BrokerTopicStats(false);
        ObjectNode report = json.createObjectNode();
        try {
            UnifiedLog log = UnifiedLog.apply(
                partitionDir, config,
                0L,                                     // logStartOffset
                0L,                                     // recoveryPoint
                scheduler, stats, Time.SYSTEM,
                900_000,                                // maxTransactionTimeoutMs
                new ProducerStateManagerConfig(86_400_000, false),
                600_000,                                // producerIdExpirationCheckIntervalMs
                new LogDirFailureChannel(1),
                true,                                   // lastShutdownClean
                topicId,
                true,                                   // keepPartitionMetadataFile
                new ConcurrentHashMap<>(),              // numRemainingSegments
                false,                                  // remoteStorageSystemEnable
                LogOffsetsListener.NO_OP_OFFSETS_LISTENER);

            ArrayNode appends = report.putArray("appends");
            for (JsonNode batch : spec.path("batches")) {
                if (batch.path("roll_before").asBoolean(false))
                    log.roll(scala.Option.empty());
                MemoryRecords records = buildBatch(batch);
                int epoch = batch.path("leader_epoch").asInt(leaderEpoch);
                LogAppendInfo info = log.appendAsLeader(records, epoch, AppendOrigin.CLIENT,
                    MetadataVersion.latestProduction(), RequestLocal.NoCaching(), VerificationGuard.SENTINEL);
                ObjectNode a = appends.addObject();
                a.put("first_offset", info.firstOffset());
                a.put("last_offset", info.lastOffset());
                a.put("max_timestamp", info.maxTimestamp());
                a.put("size_in_bytes", records.sizeInBytes());
            }

            report.put("log_start_offset", log.logStartOffset());
            report.put("log_end_offset", log.logEndOffset());
            ArrayNode segments = report.putArray("segments");
            for (LogSegment segment : log.logSegments())
                segments.add(segment.baseOffset());
            // A clean shutdown in a broker's order: the scheduler first (a roll schedules an
            // asynchronous flush that must not race the close), then the log: flush, a final
            // time index entry for the active segment, indexes trimmed to their entries,
            // producer snapshot written.
            scheduler.shutdown();
            log.close();
        } finally {
            if (scheduler.isStarted())
                scheduler.shutdown();
            stats.close();
        }
        report.put("partition_dir", partitionDir.getAbsolutePath());
        System.out.println(json.writeValueAsString(report));
    }

    private static MemoryRecords buildBatch(JsonNode batch) {
        if (batch.hasNonNull("raw"))
            return MemoryRecords.readableRecords(ByteBuffer.wrap(B64.decode(batch.get("raw").asText())));
        Compression compression = Compression.of(batch.path("compression").asText("none")).build();
        long producerId = batch.path("producer_id").asLong(RecordBatch.NO_PRODUCER_ID);
        short producerEpoch = (short) batch.path("producer_epoch").asInt(RecordBatch.NO_PRODUCER_EPOCH);
        int baseSequence = batch.path("base_sequence").asInt(RecordBatch.NO_SEQUENCE);
        ByteBuffer buffer = ByteBuffer.allocate(1024);
        MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, RecordBatch.CURRENT_MAGIC_VALUE,
            compression, TimestampType.CREATE_TIME, 0L, RecordBatch.NO_TIMESTAMP,
            producerId, producerEpoch, baseSequence);
        for (JsonNode record : batch.path("records")) {
            List<Header> headers = new ArrayList<>();
            for (JsonNode h : record.path("headers"))
                headers.add(new RecordHeader(h.get("key").asText(), bytes(h.get("value"))));
            builder.append(record.get("timestamp").asLong(), bytes(record.get("key")),
                bytes(record.get("value")), headers.toArray(new Header[0]));
        }
        return builder.build();
    }

    private static byte[] bytes(JsonNode node) {
        return node == null || node.isNull() ? null : B64.decode(node.asText());
    }
}
