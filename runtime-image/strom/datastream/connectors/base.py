"""The source and sink base classes (`pyflink.datastream.connectors.base`)."""

from strom.connectors.base import Boundedness, Source
from strom.connectors.sink_base import Sink, SinkWriter

__all__ = ["Boundedness", "Sink", "SinkWriter", "Source"]
