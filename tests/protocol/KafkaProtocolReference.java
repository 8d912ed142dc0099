/*
 * Serializes Kafka protocol messages with Apache Kafka's own generated message classes, as
 * the reference for tidelog's protocol codec. Used only by tidelog's tests.
 *
 * Run in Java's source-launcher mode with Apache Kafka's jars on the class path:
 *
 *     java -cp "<kafka-libs>/*" KafkaProtocolReference.java < spec.json
 *
 * The spec (JSON on stdin) lists messages given in the JSON form of Kafka's generated
 * *DataJsonConverter classes (field names in camel case, bytes and records in base64, uuids
 * in Kafka's base64 text form):
 *
 *     {"samples": [{"id": "...", "message": "FetchRequest", "api_key": 1, "version": 12,
 *                   "kind": "request", "header": {...}, "body": {...}}]}
 *
 * Each one is read with <message>DataJsonConverter.read, then serialized with its header
 * (header version chosen by ApiKeys) by the message's own write method.
 *
 * Prints one JSON document on stdout:
 *   "samples": [{"id", "hex", "header_version"} or {"id", "error"}]
 *   "built":   messages built here with the generated classes' setters (the cases a broker
 *              meets most, with tagged and unknown tagged fields): {"id", "message",
 *              "api_key", "version", "kind", "header_version", "hex", "body_json"}
 *   "errors":  Kafka's error codes: {"code", "name", "retriable"}
 *   "apis":    Kafka's ApiKeys: {"api_key", "name", "min_version", "max_version",
 *              "listeners", "latest_version_unstable", "request_header_versions",
 *              "response_header_versions"} (header versions for versions 0..max+1)
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.message.ControlledShutdownRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.DescribeConfigsRequestData;
import org.apache.kafka.common.message.DescribeConfigsResponseData;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.RequestHeaderDataJsonConverter;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.message.ResponseHeaderDataJsonConverter;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.SimpleRecord;

public class KafkaProtocolReference {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String PACKAGE = "org.apache.kafka.common.message.";

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
        JsonNode input = JSON.readTree(System.in);
        ObjectNode out = JSON.createObjectNode();
        ArrayNode samples = out.putArray("samples");
        for (JsonNode sample : input.get("samples")) {
            samples.add(fromJson(sample));
        }
        out.set("built", built());
        out.set("errors", errors());
        out.set("apis", apis());
        System.out.println(JSON.writeValueAsString(out));
    }

    // ----------------------------------------------------------------------------------
    // Messages given as JSON

    private static ObjectNode fromJson(JsonNode sample) {
        ObjectNode result = JSON.createObjectNode();
        result.put("id", sample.get("id").asText());
        try {
            String message = sample.get("message").asText();
            short version = (short) sample.get("version").asInt();
            ApiKeys key = ApiKeys.forId(sample.get("api_key").asInt());
            boolean request = sample.get("kind").asText().equals("request");
            short headerVersion =
                    request ? key.requestHeaderVersion(version) : key.responseHeaderVersion(version);
            ApiMessage header =
                    request
                            ? RequestHeaderDataJsonConverter.read(sample.get("header"), headerVersion)
                            : ResponseHeaderDataJsonConverter.read(sample.get("header"), headerVersion);
            Class<?> converter = Class.forName(PACKAGE + message + "DataJsonConverter");
            Method read = converter.getMethod("read", JsonNode.class, short.class);
            ApiMessage body = (ApiMessage) read.invoke(null, sample.get("body"), version);
            result.put("hex", serialize(header, headerVersion, body, version));
            result.put("header_version", headerVersion);
        } catch (InvocationTargetException e) {
            result.put("error", String.valueOf(e.getCause()));
        } catch (Exception e) {
            result.put("error", String.valueOf(e));
        }
        return result;
    }

    private static String serialize(ApiMessage header, short headerVersion, ApiMessage body, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = header.size(cache, headerVersion) + body.size(cache, version);
        ByteBuffer buffer = ByteBuffer.allocate(size);
        ByteBufferAccessor accessor = new ByteBufferAccessor(buffer);
        header.write(accessor, cache, headerVersion);
        body.write(accessor, cache, version);
        if (buffer.hasRemaining()) {
            throw new IllegalStateException("size() and write() disagree");
        }
        StringBuilder hex = new StringBuilder();
        for (byte b : buffer.array()) {
            hex.append(String.format("%02x", b));
        }
        return hex.toString();
    }

    // ----------------------------------------------------------------------------------
    // Messages built with the generated classes

    private static final ArrayNode BUILT = JSON.createArrayNode();
    private static int correlationId = 1000;

    private static void request(String id, ApiMessage body, short version) throws Exception {
        ApiKeys key = ApiKeys.forId(body.apiKey());
        short headerVersion = key.requestHeaderVersion(version);
        RequestHeaderData header =
                new RequestHeaderData()
                        .setRequestApiKey(body.apiKey())
                        .setRequestApiVersion(version)
                        .setCorrelationId(correlationId++)
                        .setClientId("tidelog-ref");
        add(id, "request", header, headerVersion, body, version);
    }

    private static void response(String id, ApiMessage body, short version) throws Exception {
        ApiKeys key = ApiKeys.forId(body.apiKey());
        short headerVersion = key.responseHeaderVersion(version);
        ResponseHeaderData header = new ResponseHeaderData().setCorrelationId(correlationId++);
        add(id, "response", header, headerVersion, body, version);
    }

    private static void add(String id, String kind, ApiMessage header, short headerVersion, ApiMessage body, short version)
            throws Exception {
        ObjectNode entry = BUILT.addObject();
        String message = body.getClass().getSimpleName().replaceAll("Data$", "");
        entry.put("id", id);
        entry.put("message", message);
        entry.put("api_key", body.apiKey());
        entry.put("version", version);
        entry.put("kind", kind);
        entry.put("header_version", headerVersion);
        entry.put("hex", serialize(header, headerVersion, body, version));
        Class<?> converter = Class.forName(PACKAGE + message + "DataJsonConverter");
        Method write = converter.getMethod("write", body.getClass(), short.class);
        entry.set("body_json", (JsonNode) write.invoke(null, body, version));
    }

    private static MemoryRecords records(String... values) {
        SimpleRecord[] records = new SimpleRecord[values.length];
        for (int i = 0; i < values.length; i++) {
            records[i] =
                    new SimpleRecord(
                            1_700_000_000_000L + i,
                            ("k" + i).getBytes(StandardCharsets.UTF_8),
                            values[i].getBytes(StandardCharsets.UTF_8));
        }
        return MemoryRecords.withRecords(Compression.NONE, records);
    }

    private static final Uuid TOPIC_ID = new Uuid(0x0123456789abcdefL, 0x0fedcba987654321L);

    private static ArrayNode built() throws Exception {
        for (short v = 0; v <= 3; v++) {
            ApiVersionsRequestData body = new ApiVersionsRequestData();
            if (v >= 3) {
                body.setClientSoftwareName("tidelog-ref").setClientSoftwareVersion("3.9.1");
            }
            request("api_versions_request_v" + v, body, v);
        }
        for (short v = 0; v <= 3; v++) {
            ApiVersionsResponseData body = new ApiVersionsResponseData().setErrorCode((short) 0);
            ApiVersionsResponseData.ApiVersionCollection keys = new ApiVersionsResponseData.ApiVersionCollection();
            keys.add(new ApiVersionsResponseData.ApiVersion().setApiKey((short) 0).setMinVersion((short) 0).setMaxVersion((short) 11));
            keys.add(new ApiVersionsResponseData.ApiVersion().setApiKey((short) 18).setMinVersion((short) 0).setMaxVersion((short) 4));
            body.setApiKeys(keys);
            if (v >= 1) {
                body.setThrottleTimeMs(5);
            }
            if (v >= 3) {
                ApiVersionsResponseData.SupportedFeatureKeyCollection features =
                        new ApiVersionsResponseData.SupportedFeatureKeyCollection();
                features.add(new ApiVersionsResponseData.SupportedFeatureKey()
                        .setName("metadata.version").setMinVersion((short) 1).setMaxVersion((short) 21));
                body.setSupportedFeatures(features);
                body.setFinalizedFeaturesEpoch(7L);
                body.setZkMigrationReady(true);
            }
            response("api_versions_response_v" + v, body, v);
        }
        // An unsupported ApiVersions version is answered with v0 and UNSUPPORTED_VERSION.
        response("api_versions_response_unsupported",
                new ApiVersionsResponseData().setErrorCode(Errors.UNSUPPORTED_VERSION.code()), (short) 0);

        for (short v : new short[] {1, 9, 12}) {
            MetadataRequestData body = new MetadataRequestData();
            MetadataRequestData.MetadataRequestTopic topic = new MetadataRequestData.MetadataRequestTopic().setName("orders");
            if (v >= 10) {
                topic.setTopicId(TOPIC_ID);
            }
            body.setTopics(Collections.singletonList(topic));
            if (v >= 4) {
                body.setAllowAutoTopicCreation(false);
            }
            if (v >= 8) {
                body.setIncludeTopicAuthorizedOperations(true);
            }
            request("metadata_request_v" + v, body, v);
        }
        request("metadata_request_v1_all_topics", new MetadataRequestData().setTopics(null), (short) 1);
        for (short v : new short[] {1, 9, 12}) {
            MetadataResponseData body = new MetadataResponseData();
            MetadataResponseData.MetadataResponseBrokerCollection brokers = new MetadataResponseData.MetadataResponseBrokerCollection();
            brokers.add(new MetadataResponseData.MetadataResponseBroker().setNodeId(1).setHost("broker-1").setPort(9092).setRack("rack-a"));
            brokers.add(new MetadataResponseData.MetadataResponseBroker().setNodeId(2).setHost("broker-2").setPort(9093).setRack(null));
            body.setBrokers(brokers).setControllerId(1);
            if (v >= 2) {
                body.setClusterId("tidelog-cluster");
            }
            MetadataResponseData.MetadataResponseTopicCollection topics = new MetadataResponseData.MetadataResponseTopicCollection();
            MetadataResponseData.MetadataResponseTopic topic = new MetadataResponseData.MetadataResponseTopic()
                    .setName("orders").setIsInternal(false)
                    .setPartitions(Arrays.asList(
                            new MetadataResponseData.MetadataResponsePartition()
                                    .setPartitionIndex(0).setLeaderId(1).setLeaderEpoch(v >= 7 ? 3 : -1)
                                    .setReplicaNodes(Arrays.asList(1, 2)).setIsrNodes(Arrays.asList(1, 2))
                                    .setOfflineReplicas(v >= 5 ? Arrays.asList(2) : Collections.emptyList()),
                            new MetadataResponseData.MetadataResponsePartition()
                                    .setErrorCode(Errors.LEADER_NOT_AVAILABLE.code())
                                    .setPartitionIndex(1).setLeaderId(-1).setLeaderEpoch(-1)
                                    .setReplicaNodes(Arrays.asList(2)).setIsrNodes(Collections.emptyList())));
            if (v >= 10) {
                topic.setTopicId(TOPIC_ID);
            }
            if (v >= 8) {
                topic.setTopicAuthorizedOperations(0x0ff8);
            }
            topics.add(topic);
            body.setTopics(topics);
            if (v >= 3) {
                body.setThrottleTimeMs(0);
            }
            response("metadata_response_v" + v, body, v);
        }

        for (short v : new short[] {3, 9}) {
            ProduceRequestData body = new ProduceRequestData().setAcks((short) -1).setTimeoutMs(30000).setTransactionalId(null);
            ProduceRequestData.TopicProduceDataCollection topics = new ProduceRequestData.TopicProduceDataCollection();
            topics.add(new ProduceRequestData.TopicProduceData().setName("orders").setPartitionData(Arrays.asList(
                    new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(records("a", "bb", "ccc")),
                    new ProduceRequestData.PartitionProduceData().setIndex(3).setRecords(records("x")))));
            body.setTopicData(topics);
            request("produce_request_v" + v, body, v);
        }

        for (short v : new short[] {4, 12, 13, 15}) {
            FetchRequestData body = new FetchRequestData().setMaxWaitMs(500).setMinBytes(1).setMaxBytes(52428800)
                    .setIsolationLevel((byte) 1);
            if (v >= 15) {
                body.setReplicaState(new FetchRequestData.ReplicaState().setReplicaId(2).setReplicaEpoch(77L));
            } else {
                body.setReplicaId(-1);
            }
            if (v >= 7) {
                body.setSessionId(0).setSessionEpoch(-1);
            }
            if (v >= 12) {
                body.setClusterId("tidelog-cluster");
            }
            if (v >= 11) {
                body.setRackId("rack-a");
            }
            FetchRequestData.FetchTopic topic = new FetchRequestData.FetchTopic();
            if (v >= 13) {
                topic.setTopicId(TOPIC_ID);
            } else {
                topic.setTopic("orders");
            }
            topic.setPartitions(Arrays.asList(
                    new FetchRequestData.FetchPartition().setPartition(0).setFetchOffset(42L).setPartitionMaxBytes(1048576)
                            .setCurrentLeaderEpoch(v >= 9 ? 3 : -1).setLogStartOffset(v >= 5 ? 0L : -1L)
                            .setLastFetchedEpoch(v >= 12 ? 2 : -1),
                    new FetchRequestData.FetchPartition().setPartition(1).setFetchOffset(0L).setPartitionMaxBytes(1048576)));
            body.setTopics(Collections.singletonList(topic));
            request("fetch_request_v" + v, body, v);
        }

        for (short v : new short[] {4, 12, 13}) {
            FetchResponseData body = new FetchResponseData().setThrottleTimeMs(0);
            if (v >= 7) {
                body.setErrorCode((short) 0).setSessionId(12345);
            }
            FetchResponseData.PartitionData p0 = new FetchResponseData.PartitionData()
                    .setPartitionIndex(0).setErrorCode((short) 0).setHighWatermark(45L).setLastStableOffset(45L)
                    .setLogStartOffset(v >= 5 ? 0L : -1L)
                    .setAbortedTransactions(Arrays.asList(
                            new FetchResponseData.AbortedTransaction().setProducerId(1000L).setFirstOffset(40L)))
                    .setRecords(records("hello", "world"));
            if (v >= 11) {
                p0.setPreferredReadReplica(-1);
            }
            FetchResponseData.PartitionData p1 = new FetchResponseData.PartitionData()
                    .setPartitionIndex(1).setErrorCode(Errors.OFFSET_OUT_OF_RANGE.code()).setHighWatermark(-1L)
                    .setLastStableOffset(-1L).setAbortedTransactions(null).setRecords(MemoryRecords.EMPTY);
            if (v >= 12) {
                p1.setDivergingEpoch(new FetchResponseData.EpochEndOffset().setEpoch(2).setEndOffset(30L));
                p1.setCurrentLeader(new FetchResponseData.LeaderIdAndEpoch().setLeaderId(2).setLeaderEpoch(4));
            }
            FetchResponseData.FetchableTopicResponse topic = new FetchResponseData.FetchableTopicResponse()
                    .setPartitions(Arrays.asList(p0, p1));
            if (v >= 13) {
                topic.setTopicId(TOPIC_ID);
            } else {
                topic.setTopic("orders");
            }
            body.setResponses(Collections.singletonList(topic));
            response("fetch_response_v" + v, body, v);
        }

        for (short v : new short[] {1, 7}) {
            ListOffsetsRequestData body = new ListOffsetsRequestData().setReplicaId(-1);
            if (v >= 2) {
                body.setIsolationLevel((byte) 1);
            }
            body.setTopics(Collections.singletonList(new ListOffsetsRequestData.ListOffsetsTopic().setName("orders")
                    .setPartitions(Arrays.asList(
                            new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(0).setTimestamp(-2L)
                                    .setCurrentLeaderEpoch(v >= 4 ? 3 : -1),
                            new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(1)
                                    .setTimestamp(1_700_000_000_000L)))));
            request("list_offsets_request_v" + v, body, v);
            ListOffsetsResponseData response = new ListOffsetsResponseData();
            response.setTopics(Collections.singletonList(new ListOffsetsResponseData.ListOffsetsTopicResponse().setName("orders")
                    .setPartitions(Arrays.asList(
                            new ListOffsetsResponseData.ListOffsetsPartitionResponse().setPartitionIndex(0)
                                    .setTimestamp(-1L).setOffset(0L).setLeaderEpoch(v >= 4 ? 3 : -1),
                            new ListOffsetsResponseData.ListOffsetsPartitionResponse().setPartitionIndex(1)
                                    .setErrorCode(Errors.NOT_LEADER_OR_FOLLOWER.code()).setTimestamp(-1L).setOffset(-1L)))));
            response("list_offsets_response_v" + v, response, v);
        }

        {
            short v = 5;
            CreateTopicsRequestData body = new CreateTopicsRequestData().setTimeoutMs(60000).setValidateOnly(true);
            CreateTopicsRequestData.CreatableTopicCollection topics = new CreateTopicsRequestData.CreatableTopicCollection();
            CreateTopicsRequestData.CreatableTopicConfigCollection configs = new CreateTopicsRequestData.CreatableTopicConfigCollection();
            configs.add(new CreateTopicsRequestData.CreatableTopicConfig().setName("cleanup.policy").setValue("compact"));
            configs.add(new CreateTopicsRequestData.CreatableTopicConfig().setName("retention.ms").setValue(null));
            topics.add(new CreateTopicsRequestData.CreatableTopic().setName("orders").setNumPartitions(3)
                    .setReplicationFactor((short) 2).setConfigs(configs));
            CreateTopicsRequestData.CreatableReplicaAssignmentCollection assignments =
                    new CreateTopicsRequestData.CreatableReplicaAssignmentCollection();
            assignments.add(new CreateTopicsRequestData.CreatableReplicaAssignment().setPartitionIndex(0).setBrokerIds(Arrays.asList(1, 2)));
            assignments.add(new CreateTopicsRequestData.CreatableReplicaAssignment().setPartitionIndex(1).setBrokerIds(Arrays.asList(2, 3)));
            topics.add(new CreateTopicsRequestData.CreatableTopic().setName("payments").setNumPartitions(-1)
                    .setReplicationFactor((short) -1).setAssignments(assignments));
            body.setTopics(topics);
            request("create_topics_request_v5", body, v);

            CreateTopicsResponseData response = new CreateTopicsResponseData().setThrottleTimeMs(0);
            CreateTopicsResponseData.CreatableTopicResultCollection results = new CreateTopicsResponseData.CreatableTopicResultCollection();
            results.add(new CreateTopicsResponseData.CreatableTopicResult().setName("orders").setErrorCode((short) 0)
                    .setNumPartitions(3).setReplicationFactor((short) 2)
                    .setConfigs(Arrays.asList(
                            new CreateTopicsResponseData.CreatableTopicConfigs().setName("cleanup.policy").setValue("compact")
                                    .setReadOnly(false).setConfigSource((byte) 1).setIsSensitive(false),
                            new CreateTopicsResponseData.CreatableTopicConfigs().setName("sasl.jaas.config").setValue(null)
                                    .setReadOnly(false).setConfigSource((byte) 5).setIsSensitive(true))));
            results.add(new CreateTopicsResponseData.CreatableTopicResult().setName("payments")
                    .setErrorCode(Errors.TOPIC_ALREADY_EXISTS.code()).setErrorMessage("Topic 'payments' already exists.")
                    .setTopicConfigErrorCode(Errors.INVALID_CONFIG.code())
                    .setNumPartitions(-1).setReplicationFactor((short) -1).setConfigs(null));
            response.setTopics(results);
            response("create_topics_response_v5", response, v);
        }

        for (short v : new short[] {1, 4}) {
            DescribeConfigsRequestData body = new DescribeConfigsRequestData().setIncludeSynonyms(true)
                    .setIncludeDocumentation(v >= 3);
            body.setResources(Arrays.asList(
                    new DescribeConfigsRequestData.DescribeConfigsResource().setResourceType((byte) 2).setResourceName("orders")
                            .setConfigurationKeys(null),
                    new DescribeConfigsRequestData.DescribeConfigsResource().setResourceType((byte) 4).setResourceName("1")
                            .setConfigurationKeys(Arrays.asList("log.retention.ms", "num.partitions"))));
            request("describe_configs_request_v" + v, body, v);
            DescribeConfigsResponseData response = new DescribeConfigsResponseData().setThrottleTimeMs(3);
            DescribeConfigsResponseData.DescribeConfigsResourceResult config = new DescribeConfigsResponseData.DescribeConfigsResourceResult()
                    .setName("retention.ms").setValue("86400000").setReadOnly(false).setConfigSource((byte) 1)
                    .setIsSensitive(false)
                    .setSynonyms(Arrays.asList(
                            new DescribeConfigsResponseData.DescribeConfigsSynonym().setName("retention.ms").setValue("86400000").setSource((byte) 1),
                            new DescribeConfigsResponseData.DescribeConfigsSynonym().setName("log.retention.hours").setValue("168").setSource((byte) 5)));
            if (v >= 3) {
                config.setConfigType((byte) 5).setDocumentation(null);
            }
            response.setResults(Collections.singletonList(new DescribeConfigsResponseData.DescribeConfigsResult()
                    .setErrorCode((short) 0).setErrorMessage(null).setResourceType((byte) 2).setResourceName("orders")
                    .setConfigs(Collections.singletonList(config))));
            response("describe_configs_response_v" + v, response, v);
        }

        for (short v : new short[] {0, 4}) {
            InitProducerIdRequestData body = new InitProducerIdRequestData().setTransactionalId(null)
                    .setTransactionTimeoutMs(60000);
            if (v >= 3) {
                body.setProducerId(-1L).setProducerEpoch((short) -1);
            }
            request("init_producer_id_request_v" + v, body, v);
            response("init_producer_id_response_v" + v, new InitProducerIdResponseData().setThrottleTimeMs(0)
                    .setErrorCode((short) 0).setProducerId(4000L).setProducerEpoch((short) 0), v);
        }

        // ControlledShutdown v0 uses request header v0 (no client id).
        request("controlled_shutdown_request_v0", new ControlledShutdownRequestData().setBrokerId(3), (short) 0);
        request("controlled_shutdown_request_v3",
                new ControlledShutdownRequestData().setBrokerId(3).setBrokerEpoch(88L), (short) 3);

        // Unknown tagged fields are kept by Kafka and written back in tag order.
        {
            ApiVersionsRequestData body = new ApiVersionsRequestData().setClientSoftwareName("x").setClientSoftwareVersion("1");
            body.unknownTaggedFields().add(new RawTaggedField(3, new byte[] {1, 2, 3}));
            body.unknownTaggedFields().add(new RawTaggedField(70, new byte[0]));
            request("api_versions_request_v3_unknown_tags", body, (short) 3);
            FetchResponseData fetch = new FetchResponseData().setSessionId(9);
            FetchResponseData.PartitionData partition = new FetchResponseData.PartitionData().setPartitionIndex(0)
                    .setHighWatermark(1L).setRecords(MemoryRecords.EMPTY)
                    .setCurrentLeader(new FetchResponseData.LeaderIdAndEpoch().setLeaderId(1).setLeaderEpoch(1));
            partition.unknownTaggedFields().add(new RawTaggedField(5, new byte[] {9, 9}));
            partition.unknownTaggedFields().add(new RawTaggedField(9, new byte[] {0}));
            fetch.setResponses(Collections.singletonList(new FetchResponseData.FetchableTopicResponse().setTopic("t")
                    .setPartitions(Collections.singletonList(partition))));
            response("fetch_response_v12_unknown_tags", fetch, (short) 12);
        }

        // A nullable struct: written with a marker byte (-1 null, 1 present).
        {
            short v = 0;
            response("consumer_group_heartbeat_response_null_assignment",
                    new ConsumerGroupHeartbeatResponseData().setMemberId("m-1").setMemberEpoch(3)
                            .setHeartbeatIntervalMs(5000).setAssignment(null), v);
            response("consumer_group_heartbeat_response_assignment",
                    new ConsumerGroupHeartbeatResponseData().setMemberId("m-1").setMemberEpoch(3)
                            .setHeartbeatIntervalMs(5000)
                            .setAssignment(new ConsumerGroupHeartbeatResponseData.Assignment().setTopicPartitions(
                                    Collections.singletonList(new ConsumerGroupHeartbeatResponseData.TopicPartitions()
                                            .setTopicId(TOPIC_ID).setPartitions(Arrays.asList(0, 2))))), v);
        }
        return BUILT;
    }

    // ----------------------------------------------------------------------------------
    // Tables

    private static ArrayNode errors() {
        ArrayNode out = JSON.createArrayNode();
        for (Errors error : Errors.values()) {
            ObjectNode entry = out.addObject();
            entry.put("code", error.code());
            entry.put("name", error.name());
            entry.put("retriable", error.exception() instanceof RetriableException);
        }
        return out;
    }

    private static ArrayNode apis() {
        ArrayNode out = JSON.createArrayNode();
        for (ApiKeys key : ApiKeys.values()) {
            ApiMessageType type = key.messageType;
            ObjectNode entry = out.addObject();
            entry.put("api_key", key.id);
            entry.put("name", key.name());
            entry.put("min_version", type.lowestSupportedVersion());
            entry.put("max_version", type.highestSupportedVersion(true));
            entry.put("latest_version_unstable", type.latestVersionUnstable());
            ArrayNode listeners = entry.putArray("listeners");
            type.listeners().stream().map(Enum::name).sorted().forEach(listeners::add);
            ArrayNode requestHeaders = entry.putArray("request_header_versions");
            ArrayNode responseHeaders = entry.putArray("response_header_versions");
            for (short v = 0; v <= type.highestSupportedVersion(true) + 1; v++) {
                requestHeaders.add(type.requestHeaderVersion(v));
                responseHeaders.add(type.responseHeaderVersion(v));
            }
        }
        return out;
    }
}
