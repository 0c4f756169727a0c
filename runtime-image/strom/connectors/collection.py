"""The collection source behind `env.from_collection`: non-parallel, emits in order."""

from __future__ import annotations

from typing import Any

from strom.connectors.base import Boundedness, Source, SourceReader, SourceReaderContext


class CollectionReader(SourceReader):
    """Slices of a list; its position (the next index) is what a checkpoint keeps."""

    def __init__(self, values: list[Any]) -> None:
        self._values = values
        self._next = 0

    def poll(self, max_records: int) -> list[Any] | None:
        start = self._next
        if start >= len(self._values):
            return None
        batch = self._values[start : start + max_records]
        self._next = start + len(batch)
        return batch

    def snapshot_position(self) -> int:
        return self._next

    def restore_position(self, position: int) -> None:
        self._next = int(position)


class CollectionSource(Source):
    name = "Collection Source"
    converts_types = True  # the reader already shapes values by type_info (Row, tuple)

    def __init__(self, collection: list[Any], type_info: Any = None) -> None:
        self.collection = list(collection)
        self.type_info = type_info

    def get_boundedness(self) -> Boundedness:
        return Boundedness.BOUNDED

    @property
    def max_parallelism(self) -> int | None:
        return 1

    def create_reader(self, context: SourceReaderContext) -> SourceReader:
        values = self.collection
        if self.type_info is not None and self.type_info.needs_conversion:
            # PyFlink converts these in Java, where integers narrow (wrap) instead of failing (typeinfo.py)
            values = [self.type_info.convert_collection_element(v) for v in values]
        return CollectionReader(values)
