/*
 * Writes and reads records of Kafka's __consumer_offsets topic with Apache Kafka's own
 * classes, for tidelog's byte-compatibility tests (used only by tidelog's tests):
 *
 *   - what Kafka writes: the ZooKeeper-mode coordinator's serializers
 *     (kafka.coordinator.group.GroupMetadataManager) and, for keys and offsets, the new
 *     coordinator's (CoordinatorRecordHelpers + CoordinatorRecordSerde), at the broker's
 *     default version (MetadataVersion.latestProduction());
 *   - every version a schema has: the generated classes
 *     (org.apache.kafka.coordinator.group.generated.*) serialized with
 *     MessageUtil.toVersionPrefixedBytes, and read back by those classes (and, for group
 *     metadata, by the ZooKeeper-mode loader, GroupMetadataManager.readGroupMessageValue).
 *
 * Run in Java's source-launcher mode with Apache Kafka's jars on the class path:
 *
 *     java -cp "<kafka-libs>/*" KafkaOffsetsRecordTool.java < jobs.json
 *
 * The input is a JSON list of jobs, answered in order by a JSON list on stdout; byte
 * strings are hex, subscription/assignment in the input are hex too:
 *
 *   {"type": "offset_key", "group": g, "topic": t, "partition": p}
 *   {"type": "group_key", "group": g}
 *       -> {"written": hex, "written_new": hex,
 *           "versions": {"<v>": {"hex": hex, "read": {fields}}, ...}}
 *   {"type": "offset_value", "offset": o, "leader_epoch": e, "metadata": m,
 *    "commit_timestamp": c, "expire_timestamp": x}        (-1: none)
 *       -> the same, plus "metadata_version"
 *   {"type": "group_value", "protocol_type": ..., "generation": ..., "protocol": ...|null,
 *    "leader": ...|null, "current_state_timestamp": ..., "members": [{"member_id": ...,
 *    "group_instance_id": ...|null, "client_id": ..., "client_host": ...,
 *    "rebalance_timeout": ..., "session_timeout": ..., "subscription": hex,
 *    "assignment": hex}, ...]}
 *       -> {"written": hex, "written_by_manager": hex (groups with at most one member,
 *           a protocol if it has one), "versions": {...}}
 *   {"type": "new_protocol_keys", "group": g, "member": m}
 *       -> {"written": [hex, ...]}   keys of KIP-848 consumer group records (versions 3+)
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import kafka.coordinator.group.GroupMetadata;
import kafka.coordinator.group.GroupMetadataManager;
import kafka.coordinator.group.MemberMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.coordinator.group.CoordinatorRecord;
import org.apache.kafka.coordinator.group.CoordinatorRecordHelpers;
import org.apache.kafka.coordinator.group.CoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.OffsetAndMetadata;
import org.apache.kafka.coordinator.group.generated.GroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.GroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.OffsetCommitKey;
import org.apache.kafka.coordinator.group.generated.OffsetCommitValue;
import org.apache.kafka.server.common.MetadataVersion;
import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

public class KafkaOffsetsRecordTool {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HexFormat HEX = HexFormat.of();
    private static final MetadataVersion MV = MetadataVersion.latestProduction();
    private static final CoordinatorRecordSerde SERDE = new CoordinatorRecordSerde();

    public static void main(String[] args) {
        try {
            ArrayNode answers = JSON.createArrayNode();
            for (JsonNode job : JSON.readTree(System.in))
                answers.add(answer(job));
            System.out.println(JSON.writeValueAsString(answers));
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
    }

    private static ObjectNode answer(JsonNode job) {
        switch (job.get("type").asText()) {
            case "offset_key": return offsetKey(job);
            case "group_key": return groupKey(job);
            case "offset_value": return offsetValue(job);
            case "group_value": return groupValue(job);
            case "new_protocol_keys": return newProtocolKeys(job);
            default: throw new IllegalArgumentException("unknown job " + job);
        }
    }

    // ----------------------------------------------------------------------------------
    // Keys

    private static ObjectNode offsetKey(JsonNode job) {
        String group = job.get("group").asText();
        String topic = job.get("topic").asText();
        int partition = job.get("partition").asInt();
        ObjectNode out = JSON.createObjectNode();
        out.put("written", hex(GroupMetadataManager.offsetCommitKey(
            group, new TopicPartition(topic, partition))));
        out.put("written_new", hex(SERDE.serializeKey(
            CoordinatorRecordHelpers.newOffsetCommitTombstoneRecord(group, topic, partition))));
        OffsetCommitKey key = new OffsetCommitKey().setGroup(group).setTopic(topic).setPartition(partition);
        putVersions(out, key, OffsetCommitKey.LOWEST_SUPPORTED_VERSION,
            OffsetCommitKey.HIGHEST_SUPPORTED_VERSION, OffsetCommitKey::new, (read, data) -> {
                ObjectNode fields = JSON.createObjectNode();
                fields.put("group", read.group());
                fields.put("topic", read.topic());
                fields.put("partition", read.partition());
                return fields;
            });
        return out;
    }

    private static ObjectNode groupKey(JsonNode job) {
        String group = job.get("group").asText();
        ObjectNode out = JSON.createObjectNode();
        out.put("written", hex(GroupMetadataManager.groupMetadataKey(group)));
        out.put("written_new", hex(SERDE.serializeKey(
            CoordinatorRecordHelpers.newGroupMetadataTombstoneRecord(group))));
        GroupMetadataKey key = new GroupMetadataKey().setGroup(group);
        putVersions(out, key, GroupMetadataKey.LOWEST_SUPPORTED_VERSION,
            GroupMetadataKey.HIGHEST_SUPPORTED_VERSION, GroupMetadataKey::new,
            (read, data) -> JSON.createObjectNode().put("group", read.group()));
        return out;
    }

    private static ObjectNode newProtocolKeys(JsonNode job) {
        String group = job.get("group").asText();
        String member = job.get("member").asText();
        List<CoordinatorRecord> records = List.of(
            CoordinatorRecordHelpers.newGroupEpochTombstoneRecord(group),
            CoordinatorRecordHelpers.newGroupSubscriptionMetadataTombstoneRecord(group),
            CoordinatorRecordHelpers.newMemberSubscriptionTombstoneRecord(group, member),
            CoordinatorRecordHelpers.newTargetAssignmentTombstoneRecord(group, member),
            CoordinatorRecordHelpers.newTargetAssignmentEpochTombstoneRecord(group),
            CoordinatorRecordHelpers.newCurrentAssignmentTombstoneRecord(group, member));
        ObjectNode out = JSON.createObjectNode();
        ArrayNode written = out.putArray("written");
        for (CoordinatorRecord record : records)
            written.add(hex(SERDE.serializeKey(record)));
        return out;
    }

    // ----------------------------------------------------------------------------------
    // Offset values

    private static ObjectNode offsetValue(JsonNode job) {
        long offset = job.get("offset").asLong();
        int leaderEpoch = job.get("leader_epoch").asInt();
        String metadata = job.get("metadata").asText();
        long commitTimestamp = job.get("commit_timestamp").asLong();
        long expireTimestamp = job.get("expire_timestamp").asLong();
        ObjectNode out = JSON.createObjectNode();
        out.put("metadata_version", MV.version());

        // The ZooKeeper-mode coordinator (what a 3.9 broker on ZooKeeper runs).
        kafka.common.OffsetAndMetadata zk = kafka.common.OffsetAndMetadata.apply(
            offset,
            leaderEpoch == -1 ? Optional.empty() : Optional.of(leaderEpoch),
            metadata,
            commitTimestamp,
            expireTimestamp == -1 ? Option.empty() : Option.apply((Object) expireTimestamp));
        out.put("written", hex(GroupMetadataManager.offsetCommitValue(zk, MV)));

        // The new (KRaft) coordinator.
        OffsetAndMetadata kraft = new OffsetAndMetadata(
            offset,
            leaderEpoch == -1 ? OptionalInt.empty() : OptionalInt.of(leaderEpoch),
            metadata,
            commitTimestamp,
            expireTimestamp == -1 ? OptionalLong.empty() : OptionalLong.of(expireTimestamp));
        out.put("written_new", hex(SERDE.serializeValue(
            CoordinatorRecordHelpers.newOffsetCommitRecord("g", "t", 0, kraft, MV))));

        OffsetCommitValue value = new OffsetCommitValue()
            .setOffset(offset)
            .setLeaderEpoch(leaderEpoch)
            .setMetadata(metadata)
            .setCommitTimestamp(commitTimestamp)
            .setExpireTimestamp(expireTimestamp);
        putVersions(out, value, OffsetCommitValue.LOWEST_SUPPORTED_VERSION,
            OffsetCommitValue.HIGHEST_SUPPORTED_VERSION, OffsetCommitValue::new, (read, data) -> {
                ObjectNode fields = JSON.createObjectNode();
                fields.put("offset", read.offset());
                fields.put("leader_epoch", read.leaderEpoch());
                fields.put("metadata", read.metadata());
                fields.put("commit_timestamp", read.commitTimestamp());
                fields.put("expire_timestamp", read.expireTimestamp());
                return fields;
            });
        return out;
    }

    // ----------------------------------------------------------------------------------
    // Group metadata values

    private static ObjectNode groupValue(JsonNode job) {
        GroupMetadataValue value = new GroupMetadataValue()
            .setProtocolType(job.get("protocol_type").asText())
            .setGeneration(job.get("generation").asInt())
            .setProtocol(textOrNull(job.get("protocol")))
            .setLeader(textOrNull(job.get("leader")))
            .setCurrentStateTimestamp(job.get("current_state_timestamp").asLong());
        List<GroupMetadataValue.MemberMetadata> members = new ArrayList<>();
        for (JsonNode m : job.get("members")) {
            members.add(new GroupMetadataValue.MemberMetadata()
                .setMemberId(m.get("member_id").asText())
                .setGroupInstanceId(textOrNull(m.get("group_instance_id")))
                .setClientId(m.get("client_id").asText())
                .setClientHost(m.get("client_host").asText())
                .setRebalanceTimeout(m.get("rebalance_timeout").asInt())
                .setSessionTimeout(m.get("session_timeout").asInt())
                .setSubscription(HEX.parseHex(m.get("subscription").asText()))
                .setAssignment(HEX.parseHex(m.get("assignment").asText())));
        }
        value.setMembers(members);

        ObjectNode out = JSON.createObjectNode();
        out.put("metadata_version", MV.version());
        out.put("written", hex(MessageUtil.toVersionPrefixedBytes(MV.groupMetadataValueVersion(), value)));
        if (members.size() <= 1 && (members.isEmpty() || value.protocol() != null))
            out.put("written_by_manager", hex(writeWithManager(value)));

        putVersions(out, value, GroupMetadataValue.LOWEST_SUPPORTED_VERSION,
            GroupMetadataValue.HIGHEST_SUPPORTED_VERSION, GroupMetadataValue::new,
            KafkaOffsetsRecordTool::groupValueFields);
        return out;
    }

    private static ObjectNode groupValueFields(GroupMetadataValue read, byte[] data) {
        // The ZooKeeper-mode loader's view of the members (e.g. v0's rebalance timeout).
        GroupMetadata loaded = GroupMetadataManager.readGroupMessageValue(
            "reference", ByteBuffer.wrap(data), Time.SYSTEM);
        ObjectNode fields = JSON.createObjectNode();
        fields.put("protocol_type", read.protocolType());
        fields.put("generation", read.generation());
        fields.put("protocol", read.protocol());
        fields.put("leader", read.leader());
        fields.put("current_state_timestamp", read.currentStateTimestamp());
        ArrayNode readMembers = fields.putArray("members");
        for (GroupMetadataValue.MemberMetadata m : read.members()) {
            ObjectNode member = readMembers.addObject();
            member.put("member_id", m.memberId());
            member.put("group_instance_id", m.groupInstanceId());
            member.put("client_id", m.clientId());
            member.put("client_host", m.clientHost());
            member.put("rebalance_timeout", m.rebalanceTimeout());
            member.put("session_timeout", m.sessionTimeout());
            member.put("subscription", hex(m.subscription()));
            member.put("assignment", hex(m.assignment()));
            member.put("loader_rebalance_timeout", loaded.get(m.memberId()).rebalanceTimeoutMs());
        }
        return fields;
    }

    /** The ZooKeeper-mode coordinator's own writer, given the group it would hold. */
    private static byte[] writeWithManager(GroupMetadataValue value) {
        List<MemberMetadata> members = new ArrayList<>();
        Map<String, byte[]> assignments = new HashMap<>();
        for (GroupMetadataValue.MemberMetadata m : value.members()) {
            List<Tuple2<String, byte[]>> protocols =
                Collections.singletonList(new Tuple2<>(value.protocol(), m.subscription()));
            members.add(new MemberMetadata(
                m.memberId(),
                Option.apply(m.groupInstanceId()),
                m.clientId(),
                m.clientHost(),
                m.rebalanceTimeout(),
                m.sessionTimeout(),
                value.protocolType(),
                CollectionConverters.asScala(protocols).toList(),
                m.assignment()));
            assignments.put(m.memberId(), m.assignment());
        }
        long timestamp = value.currentStateTimestamp();
        GroupMetadata group = GroupMetadata.loadGroup(
            "reference",
            members.isEmpty() ? kafka.coordinator.group.Empty$.MODULE$ : kafka.coordinator.group.Stable$.MODULE$,
            value.generation(),
            value.protocolType(),
            value.protocol(),
            value.leader(),
            timestamp == -1 ? Option.empty() : Option.apply((Object) timestamp),
            CollectionConverters.asScala(members),
            Time.SYSTEM);
        return GroupMetadataManager.groupMetadataValue(group, CollectionConverters.asScala(assignments), MV);
    }

    // ----------------------------------------------------------------------------------

    /** A generated message's constructor that reads one version of it. */
    private interface Reader<T> {
        T read(ByteBufferAccessor accessor, short version);
    }

    /** The fields a test compares, of a message read back from its bytes. */
    private interface Fields<T> {
        ObjectNode of(T read, byte[] data);
    }

    /** out.versions.<v> = {hex: the message written in version v, read: its fields read back}. */
    private static <T extends ApiMessage> void putVersions(
            ObjectNode out, T message, short lowest, short highest, Reader<T> reader, Fields<T> fields) {
        ObjectNode versions = out.putObject("versions");
        for (short v = lowest; v <= highest; v++) {
            byte[] data = MessageUtil.toVersionPrefixedBytes(v, message);
            ByteBuffer buf = ByteBuffer.wrap(data);
            short version = buf.getShort();
            ObjectNode entry = versions.putObject(Short.toString(v));
            entry.put("hex", hex(data));
            entry.set("read", fields.of(reader.read(new ByteBufferAccessor(buf), version), data));
        }
    }

    private static String textOrNull(JsonNode node) {
        return node == null || node.isNull() ? null : node.asText();
    }

    private static String hex(byte[] data) {
        return HEX.formatHex(data);
    }
}
