"""`DataStream.project`: keep some fields of tuple records, in the order given.

PyFlink: "Initiates a Project transformation on a Tuple DataStream. Note that only Tuple
DataStreams can be projected." A stream whose declared type is not a tuple type is refused
with PyFlink's message; the result is typed as a tuple of the kept fields' types.
"""

from __future__ import annotations

from typing import Any

from strom.common.typeinfo import TupleTypeInfo, TypeInformation
from strom.datastream.functions import MapFunction


class ProjectionError(Exception):
    """project() on a stream that is not of a tuple type (PyFlink raises a plain Exception)."""


class Projection(MapFunction):
    """Keeps the fields at `indexes` of a tuple, as a tuple."""

    def __init__(self, indexes: tuple[int, ...]) -> None:
        self.indexes = indexes

    def map(self, value: Any) -> tuple[Any, ...]:  # hot path: called per record
        return tuple([value[i] for i in self.indexes])


def projected_type(type_info: TypeInformation | None, indexes: tuple[int, ...]) -> TupleTypeInfo:
    """The tuple type of the kept fields; refuses what PyFlink refuses."""
    if not isinstance(type_info, TupleTypeInfo):
        raise ProjectionError(
            f"Only Tuple DataStreams can be projected; this stream's type is {type_info!r}: declare its type as "
            "Types.TUPLE([...]) (output_type=...) or use map()"
        )
    fields = type_info.get_field_types()
    if not indexes:
        raise ProjectionError("project() needs at least one field index")
    for i in indexes:
        if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < len(fields):
            raise ProjectionError(f"project(): field index {i!r} is out of range for {type_info!r}")
    return TupleTypeInfo([fields[i] for i in indexes])
