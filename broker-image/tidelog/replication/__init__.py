"""Partitions this broker hosts, their leadership, high watermark and waiting requests."""
