"""tidelog: a Kafka-compatible, replicated commit log."""

__version__ = "0.1.0"
