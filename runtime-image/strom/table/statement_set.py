"""`StatementSet` (PyFlink's): several INSERTs planned together and run as ONE job with several sinks.
Identical sub-plans (the same table scanned, the same filter) are translated once and feed every sink
that reads them, as Flink's planner reuses common sub-plans of a statement set.

`EXECUTE STATEMENT SET BEGIN .. END` and the SQL client's `BEGIN STATEMENT SET; .. END;` (across
execute_sql calls) run through the same class.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from strom.table.errors import ValidationException
from strom.table.sql import parser as sqlp
from strom.table.table_result import TableResult

if TYPE_CHECKING:
    from strom.table.environment import TableEnvironment
    from strom.table.table import Table


class StatementSet:
    def __init__(self, t_env: TableEnvironment) -> None:
        self._t_env = t_env
        self._inserts: list[tuple[str, Any, list[str] | None, bool]] = []  # (target, plan, columns, overwrite)

    def add_insert_sql(self, statement: str) -> StatementSet:
        s = sqlp.parse_statement(statement)
        if not isinstance(s, sqlp.Insert):
            raise ValidationException(f"add_insert_sql takes an INSERT statement, got a {type(s).__name__} "
                                      f"statement ({statement.strip().split()[0] if statement.strip() else ''!r})")
        return self._add(s)

    def _add(self, s: sqlp.Insert) -> StatementSet:
        self._t_env._sync_session()
        node = self._t_env._insert_plan(s)
        self._t_env._check_insert(s.target, node, s.columns, s.overwrite)  # fails now, as Flink does on add
        self._inserts.append((s.target, node, s.columns, s.overwrite))
        return self

    def add_insert(self, target_path: str, table: Table, overwrite: bool = False) -> StatementSet:
        self._t_env._check_insert(target_path, table._node, None, overwrite)
        self._inserts.append((target_path, table._node, None, overwrite))
        return self

    def explain(self, *extra_details: Any) -> str:
        """Each sink's plan; shared sub-plans appear under every sink that reads them."""
        parts = []
        for target, node, _, _ in self._inserts:
            name = self._t_env._catalog.get(target).name
            parts.append(f"Sink(table=[default_catalog.default_database.{name}])\n+- " + node.digest())
        return "== Optimized Physical Plan ==\n" + "\n\n".join(parts) + "\n"

    def execute(self) -> TableResult:
        if not self._inserts:
            raise ValidationException("No operators defined in streaming topology. Cannot generate StreamGraph. "
                                      "(the statement set has no INSERT: add_insert_sql / add_insert first)")
        inserts, self._inserts = self._inserts, []  # Flink clears the set once it is executed
        return self._t_env._execute_inserts(inserts)

    def __len__(self) -> int:
        return len(self._inserts)
