"""Table.add_columns / add_or_replace_columns / rename_columns / drop_columns as one projection list each,
with Flink's rules (ColumnOperationUtils): added columns go last, replaced ones keep their position,
renames and drops name existing columns only. Pure: column names and expressions in, expressions out."""

from __future__ import annotations

from strom.table.errors import ValidationException
from strom.table.expressions import Expression, col


def _name_of_added(e: Expression, position: int) -> str:
    # Flink names an unaliased added expression like a select item: a column keeps its name, else _c<i>
    if e.op in ("alias", "col"):
        return e.name
    return f"_c{position}"


def add_columns(names: list[str], fields: list[Expression], replace: bool) -> list[Expression]:
    method = "add_or_replace_columns" if replace else "add_columns"
    if not fields:
        raise ValidationException(f"{method}: give at least one expression")
    out: list[Expression] = [col(n) for n in names]
    for e in fields:
        if e.contains_aggregate():
            raise ValidationException(f"{method}: aggregate {e.sql()} is not allowed; use group_by(...).select")
        name = _name_of_added(e, len(out))
        item = e if e.op == "alias" else e.alias(name)
        current = [o.name for o in out]
        if name in current:
            if not replace:
                raise ValidationException(
                    f"add_columns: column {name!r} already exists; use add_or_replace_columns or another alias"
                )
            out[current.index(name)] = item  # Flink keeps a replaced column's position; a later one wins
        else:
            out.append(item)
    return out


def rename_columns(names: list[str], fields: list[Expression]) -> list[Expression]:
    if not fields:
        raise ValidationException("rename_columns: give at least one col('old').alias('new')")
    renames: dict[str, str] = {}
    for e in fields:
        if e.op != "alias" or e.args[0].op != "col":
            raise ValidationException(f"rename_columns: {e.sql()} is not of the form col('old').alias('new')")
        old = e.args[0].name
        if old not in names:
            raise ValidationException(f"rename_columns: unknown column {old!r}; the table has {', '.join(names)}")
        if old in renames:
            raise ValidationException(f"rename_columns: column {old!r} is renamed twice")
        renames[old] = e.name
    out = [col(n).alias(renames[n]) if n in renames else col(n) for n in names]
    final = [renames.get(n, n) for n in names]
    dup = next((n for i, n in enumerate(final) if n in final[:i]), None)
    if dup is not None:
        raise ValidationException(f"rename_columns: the result would have column {dup!r} twice")
    return out


def drop_columns(names: list[str], fields: list[Expression]) -> list[Expression]:
    if not fields:
        raise ValidationException("drop_columns: give at least one col('name')")
    dropped: set[str] = set()
    for e in fields:
        if e.op != "col":
            raise ValidationException(f"drop_columns: {e.sql()} is not a column reference; use col('name')")
        if e.name not in names:
            raise ValidationException(f"drop_columns: unknown column {e.name!r}; the table has {', '.join(names)}")
        dropped.add(e.name)
    kept = [col(n) for n in names if n not in dropped]
    if not kept:
        raise ValidationException("drop_columns: cannot drop every column of the table")
    return kept
