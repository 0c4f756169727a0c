"""The source and sink base classes (`pyflink.datastream.connectors.base`)."""

from strom.connectors.base import Boundedness, Source
from strom.connectors.kafka.sink import DeliveryGuarantee  # PyFlink's home of it; the Kafka sink takes it
from strom.connectors.sink_base import Sink, SinkWriter

__all__ = ["Boundedness", "DeliveryGuarantee", "Sink", "SinkWriter", "Source"]
