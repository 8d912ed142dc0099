"""The ZooKeeper-backed cluster metadata and controller."""
