"""The in-memory catalog `default_catalog.default_database`: tables (CREATE TABLE: columns + connector
options) and temporary views (a plan). Names are case-sensitive, as in Flink."""

from __future__ import annotations

from dataclasses import dataclass, field

from strom.table.errors import ValidationException
from strom.table.expressions import Expression
from strom.table.planner.plan import PlanNode
from strom.table.types import DataType

CATALOG = "default_catalog"
DATABASE = "default_database"


@dataclass
class CatalogTable:
    name: str
    columns: list[tuple[str, DataType]]  # physical columns
    options: dict[str, str]
    computed: list[tuple[str, Expression]] = field(default_factory=list)
    order: list[str] = field(default_factory=list)  # all columns, declared order (empty: the physical ones)
    watermark: tuple[str, Expression] | None = None
    primary_key: tuple[str, ...] = ()  # PRIMARY KEY (..) NOT ENFORCED
    partition_keys: tuple[str, ...] = ()  # PARTITIONED BY (..)


@dataclass
class CatalogView:
    name: str
    node: PlanNode


class Catalog:
    def __init__(self) -> None:
        self._objects: dict[str, CatalogTable | CatalogView] = {}

    @staticmethod
    def normalize(path: str) -> str:
        parts = path.split(".")
        if len(parts) == 3 and parts[:2] == [CATALOG, DATABASE]:
            return parts[2]
        if len(parts) == 2 and parts[0] == DATABASE:
            return parts[1]
        if len(parts) != 1:
            raise ValidationException(f"unknown catalog or database in {path!r}; only {CATALOG}.{DATABASE} exists")
        return path

    def register(self, obj: CatalogTable | CatalogView, if_not_exists: bool = False, replace: bool = False) -> None:
        if obj.name in self._objects and not replace:
            if if_not_exists:
                return
            raise ValidationException(
                f"table or view {obj.name!r} already exists in {CATALOG}.{DATABASE} (use IF NOT EXISTS or drop it)"
            )
        self._objects[obj.name] = obj

    def get(self, path: str) -> CatalogTable | CatalogView:
        name = self.normalize(path)
        obj = self._objects.get(name)
        if obj is None:
            known = ", ".join(sorted(self._objects)) or "none"
            raise ValidationException(f"Object {name!r} not found within '{CATALOG}.{DATABASE}' (known: {known})")
        return obj

    def drop(self, path: str, if_exists: bool, view: bool) -> None:
        name = self.normalize(path)
        obj = self._objects.get(name)
        if obj is None or isinstance(obj, CatalogView) != view:
            if if_exists:
                return
            what = "view" if view else "table"
            raise ValidationException(f"{what} {name!r} does not exist in {CATALOG}.{DATABASE}")
        del self._objects[name]

    def names(self, views_only: bool = False) -> list[str]:
        return sorted(n for n, o in self._objects.items() if not views_only or isinstance(o, CatalogView))
