"""`OutputTag`: names a side output."""

from __future__ import annotations

from strom.common.typeinfo import TypeInformation


class OutputTag:
    def __init__(self, tag_id: str, type_info: TypeInformation | None = None) -> None:
        if not isinstance(tag_id, str) or not tag_id:
            raise ValueError("an OutputTag needs a non-empty id")
        self.tag_id = tag_id
        self.type_info = type_info

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other.tag_id == self.tag_id

    def __hash__(self) -> int:
        return hash(self.tag_id)  # in-process dict lookups only; never a partition or file name

    def __repr__(self) -> str:
        return f"OutputTag({self.tag_id!r})"
