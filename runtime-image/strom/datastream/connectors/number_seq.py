"""The number sequence source (`pyflink.datastream.connectors.number_seq`)."""

from strom.connectors.number_sequence import NumberSequenceSource

__all__ = ["NumberSequenceSource"]
