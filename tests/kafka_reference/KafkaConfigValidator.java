/*
 * Asks Apache Kafka's own configuration classes whether they accept a config value, for
 * tidelog's config-parity test. Used only by tidelog's tests, as a reference.
 *
 * Run in Java's source-launcher mode with Apache Kafka's jars on the class path:
 *
 *     java -cp "<kafka-libs>/*" KafkaConfigValidator.java < jobs.json
 *
 * The input is a JSON list of jobs, answered in order by a JSON list on stdout:
 *
 *     {"scope": "topic", "key": "segment.bytes", "value": "abc"}
 *     {"scope": "broker", "key": "num.io.threads", "value": "0"}
 *         -> {"accepted": true}  or  {"accepted": false, "message": "<Kafka's message>"}
 *     {"describe": "topic"}  or  {"describe": "broker"}
 *         -> {"<key>": {"type": "INT", "validator": "[14,...]" or null}, ...}: every key of
 *            LogConfig's or KafkaConfig's ConfigDef, its type and its validator's text
 *
 * A topic value goes through LogConfig.validate as a ZooKeeper-mode broker validates a
 * CreateTopics or AlterConfigs request (AdminZkClient.validateTopicCreate): the value over
 * the log configs of a broker with default settings, no remote storage system, fromZK.
 * A broker value goes through KafkaConfig.fromProps, as a broker reads server.properties,
 * with zookeeper.connect set (a ZooKeeper-mode broker) and nothing else.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Collections;
import java.util.Map;
import java.util.Properties;
import kafka.server.KafkaConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.storage.internals.log.LogConfig;

public class KafkaConfigValidator {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String ZOOKEEPER_CONNECT = "127.0.0.1:2181";

    public static void main(String[] args) {
        try {
            run();
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
    }

    private static void run() throws Exception {
        Map<String, Object> brokerLogConfigs = KafkaConfig.fromProps(brokerProps(), false)
            .extractLogConfigMap();
        ArrayNode answers = JSON.createArrayNode();
        for (JsonNode job : JSON.readTree(System.in))
            answers.add(answer(job, brokerLogConfigs));
        System.out.println(JSON.writeValueAsString(answers));
    }

    private static Properties brokerProps() {
        Properties props = new Properties();
        props.setProperty("zookeeper.connect", ZOOKEEPER_CONNECT);
        return props;
    }

    private static ObjectNode describe(String scope) {
        Map<String, ConfigDef.ConfigKey> keys = scope.equals("topic")
            ? LogConfig.configKeys() : KafkaConfig.configDef().configKeys();
        ObjectNode result = JSON.createObjectNode();
        for (ConfigDef.ConfigKey key : keys.values()) {
            ObjectNode entry = result.putObject(key.name);
            entry.put("type", key.type.name());
            entry.put("validator", key.validator == null ? null : key.validator.toString());
        }
        return result;
    }

    private static ObjectNode answer(JsonNode job, Map<String, Object> brokerLogConfigs) {
        if (job.has("describe"))
            return describe(job.get("describe").asText());
        String scope = job.get("scope").asText();
        String key = job.get("key").asText();
        String value = job.get("value").asText();
        if (!scope.equals("topic") && !scope.equals("broker"))
            throw new IllegalArgumentException("unknown scope " + scope);
        ObjectNode result = JSON.createObjectNode();
        try {
            if (scope.equals("topic")) {
                Properties props = new Properties();
                props.setProperty(key, value);
                LogConfig.validate(Collections.emptyMap(), props, brokerLogConfigs, false, true);
            } else {
                Properties props = brokerProps();
                props.setProperty(key, value);
                KafkaConfig.fromProps(props, false);
            }
            result.put("accepted", true);
        } catch (RuntimeException e) {
            result.put("accepted", false);
            result.put("message", e.getClass().getSimpleName() + ": " + e.getMessage());
        }
        return result;
    }
}
