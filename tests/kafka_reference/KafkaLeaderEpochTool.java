/*
 * Runs Apache Kafka's own leader epoch classes for tidelog's tests: its checkpoint file
 * (org.apache.kafka.storage.internals.checkpoint.LeaderEpochCheckpointFile) and its cache
 * (org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache). Used only by tidelog's
 * tests, as a reference.
 *
 * Run in Java's source-launcher mode with Apache Kafka's jars on the class path:
 *
 *     java -cp "<kafka-libs>/*" KafkaLeaderEpochTool.java < jobs.json
 *
 * The input is a JSON list of jobs, answered in order by a JSON list on stdout:
 *
 *     {"op": "read", "file": "/x/leader-epoch-checkpoint"}
 *         -> {"entries": [[epoch, startOffset], ...]}  or  {"error": "<exception>"}
 *     {"op": "write", "file": "/x/leader-epoch-checkpoint", "entries": [[0, 0], [3, 12]]}
 *         -> {}
 *     {"op": "cache", "dir": "/x", "steps": [["assign", 3, 12], ["truncate_from_end", 10],
 *             ["truncate_from_start", 4], ["end_offset_for", 2, 30], ["clear"]]}
 *         -> {"results": [null | "<exception>" | [epoch, endOffset], ...],
 *             "entries": [[epoch, startOffset], ...]}   (the cache's entries at the end)
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.server.util.KafkaScheduler;
import org.apache.kafka.storage.internals.checkpoint.LeaderEpochCheckpointFile;
import org.apache.kafka.storage.internals.epoch.LeaderEpochFileCache;
import org.apache.kafka.storage.internals.log.EpochEntry;
import org.apache.kafka.storage.internals.log.LogDirFailureChannel;

public class KafkaLeaderEpochTool {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) {
        try {
            run();
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
    }

    private static void run() throws Exception {
        KafkaScheduler scheduler = new KafkaScheduler(1);
        scheduler.startup();
        try {
            ArrayNode answers = JSON.createArrayNode();
            for (JsonNode job : JSON.readTree(System.in))
                answers.add(answer(job, scheduler));
            System.out.println(JSON.writeValueAsString(answers));
        } finally {
            scheduler.shutdown();
        }
    }

    private static ObjectNode answer(JsonNode job, KafkaScheduler scheduler) throws Exception {
        ObjectNode out = JSON.createObjectNode();
        switch (job.get("op").asText()) {
            case "read":
                try {
                    out.set("entries", entriesJson(checkpoint(new File(job.get("file").asText())).read()));
                } catch (Exception e) {
                    out.put("error", e.toString());
                }
                return out;
            case "write":
                checkpoint(new File(job.get("file").asText())).write(entries(job.get("entries")));
                return out;
            case "cache":
                File file = new File(job.get("dir").asText(), "leader-epoch-checkpoint");
                LeaderEpochFileCache cache = new LeaderEpochFileCache(
                    new TopicPartition("reference", 0), checkpoint(file), scheduler);
                ArrayNode results = out.putArray("results");
                for (JsonNode step : job.get("steps"))
                    results.add(apply(cache, step));
                out.set("entries", entriesJson(cache.epochEntries()));
                return out;
            default:
                throw new IllegalArgumentException("unknown op " + job.get("op"));
        }
    }

    private static JsonNode apply(LeaderEpochFileCache cache, JsonNode step) {
        try {
            switch (step.get(0).asText()) {
                case "assign":
                    cache.assign(step.get(1).asInt(), step.get(2).asLong());
                    return JSON.nullNode();
                case "truncate_from_end":
                    cache.truncateFromEndAsyncFlush(step.get(1).asLong());
                    return JSON.nullNode();
                case "truncate_from_start":
                    cache.truncateFromStartAsyncFlush(step.get(1).asLong());
                    return JSON.nullNode();
                case "clear":
                    cache.clearAndFlush();
                    return JSON.nullNode();
                case "end_offset_for":
                    Map.Entry<Integer, Long> found = cache.endOffsetFor(step.get(1).asInt(), step.get(2).asLong());
                    ArrayNode pair = JSON.createArrayNode();
                    pair.add(found.getKey());
                    pair.add(found.getValue());
                    return pair;
                default:
                    throw new IllegalArgumentException("unknown step " + step);
            }
        } catch (IllegalArgumentException e) {
            return JSON.getNodeFactory().textNode(e.toString());
        }
    }

    private static LeaderEpochCheckpointFile checkpoint(File file) throws Exception {
        return new LeaderEpochCheckpointFile(file, new LogDirFailureChannel(1));
    }

    private static List<EpochEntry> entries(JsonNode pairs) {
        List<EpochEntry> entries = new ArrayList<>();
        for (JsonNode pair : pairs)
            entries.add(new EpochEntry(pair.get(0).asInt(), pair.get(1).asLong()));
        return entries;
    }

    private static ArrayNode entriesJson(List<EpochEntry> entries) {
        ArrayNode out = JSON.createArrayNode();
        for (EpochEntry entry : entries) {
            ArrayNode pair = out.addArray();
            pair.add(entry.epoch);
            pair.add(entry.startOffset);
        }
        return out;
    }
}
