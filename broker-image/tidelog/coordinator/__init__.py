"""Coordinators: producer ids now; consumer groups and their offsets topic later."""
