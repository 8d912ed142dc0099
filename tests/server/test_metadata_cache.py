import uuid

from tidelog.server.metadata_cache import MetadataCache, PartitionMetadata


def test_topics_by_id_and_the_cached_response_follow_every_change():
    cache = MetadataCache("cluster")
    first, second = uuid.uuid4(), uuid.uuid4()
    cache.update_partition("t", first, PartitionMetadata(0, 1, 0, [1], [1]))
    entry = cache.topic_by_id(first)
    assert entry.name == "t"
    entry.encoded[12] = "written"
    cache.update_partition("t", first, PartitionMetadata(0, 1, 1, [1], [1]))
    assert not entry.encoded  # a leadership change invalidates the view
    cache.update_partition("t", second, PartitionMetadata(0, 1, 0, [1], [1]))  # recreated
    assert cache.topic_by_id(first) is None and cache.topic_by_id(second).name == "t"
    cache.remove_topic("t")
    assert cache.topic_by_id(second) is None and "t" not in cache.topics
