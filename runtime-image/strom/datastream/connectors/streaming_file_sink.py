"""`StreamingFileSink`: PyFlink's deprecated name for the file sink, over Strom's FileSink.

PyFlink: "Sink that emits its input elements to FileSystem files within buckets. This is
integrated with the checkpointing mechanism to provide exactly once semantics." and marks it
deprecated in favour of FileSink. `StreamingFileSink.for_row_format(path, encoder)...build()`
gives a FileSink (the same builder), which `ds.add_sink(...)` accepts as PyFlink programs pass it;
in-progress and pending part files are committed on checkpoint completion, as FileSink's are.
"""

from __future__ import annotations

from typing import Any

from strom.common.serialization import Encoder
from strom.common.unsupported import UnsupportedFeatureError
from strom.connectors.file import RowFormatBuilder


class StreamingFileSink:
    DefaultRowFormatBuilder = RowFormatBuilder

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("StreamingFileSink is built with StreamingFileSink.for_row_format(base_path, encoder).build()")

    @staticmethod
    def for_row_format(base_path: str, encoder: Encoder) -> RowFormatBuilder:
        return RowFormatBuilder(base_path, encoder)

    @staticmethod
    def for_bulk_format(base_path: str, writer_factory: Any) -> Any:
        raise UnsupportedFeatureError(
            "StreamingFileSink.for_bulk_format: Strom has no bulk (Parquet/ORC/Avro) writers; use "
            "for_row_format(base_path, Encoder.simple_string_encoder()) or FileSink.for_row_format"
        )


__all__ = ["StreamingFileSink"]
