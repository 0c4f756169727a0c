"""Formats of records in external systems (`pyflink.datastream.formats`)."""
