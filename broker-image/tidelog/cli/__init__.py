"""Command-line tools, each mirroring the Apache Kafka tool of the same name."""
