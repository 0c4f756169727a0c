"""Flink's JSON functions: JSON_VALUE, JSON_QUERY, JSON_EXISTS, JSON_OBJECT, JSON_ARRAY and IS JSON,
merged into strom.table.planner.scalar's call table.

Paths are SQL/JSON path expressions in lax mode ('$', '$.a.b', '$.a[0]', '$["a b"]', '$.a[*]'); Flink's
defaults: NULL ON EMPTY and NULL ON ERROR, JSON_QUERY WITHOUT WRAPPER, JSON_OBJECT NULL ON NULL,
JSON_ARRAY ABSENT ON NULL. Generated JSON is compact ({"a":1}) as Flink writes it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from strom.table.errors import ValidationException
from strom.table.expressions import Expression
from strom.table.planner.values import sql_string
from strom.table.types import DataType, DataTypes

Fn = Callable[[Sequence[Any]], Any]
Builder = Callable[[Expression, list[Fn], list[DataType]], tuple[Fn, DataType]]
_MISSING = object()
_STEP = re.compile(r"\.(\w+)|\.\"([^\"]*)\"|\[\s*(\d+|\*)\s*\]|\[\s*['\"]([^'\"]*)['\"]\s*\]|\.\*")


def path_steps(path: str) -> list[Any]:
    """'$.a[0].b' -> ['a', 0, 'b'] ('*' for a wildcard); ValueError for what is not a path."""
    text = path.strip()
    if text.lower().startswith("lax "):
        text = text[4:].strip()
    if not text.startswith("$"):
        raise ValueError(f"JSON path {path!r} must start with $")
    steps: list[Any] = []
    i = 1
    while i < len(text):
        m = _STEP.match(text, i)
        if m is None:
            raise ValueError(f"cannot read JSON path {path!r} at {text[i:]!r}")
        name, quoted, index, key = m.groups()
        if name is not None or quoted is not None or key is not None:
            steps.append(name if name is not None else quoted if quoted is not None else key)
        else:
            steps.append("*" if index in (None, "*") else int(index))
        i = m.end()
    return steps


def _select(doc: Any, steps: list[Any]) -> list[Any]:
    current = [doc]
    for step in steps:
        out = []
        for v in current:
            if step == "*":
                out.extend(v if isinstance(v, list) else v.values() if isinstance(v, dict) else [])
            elif isinstance(step, int):
                if isinstance(v, list) and step < len(v):
                    out.append(v[step])
            elif isinstance(v, dict) and step in v:
                out.append(v[step])
        current = out
    return current


def _matches(text: Any, path: str) -> list[Any] | None:
    """What the path selects in the JSON text; None when the text is not JSON or the path is invalid."""
    try:
        doc = json.loads(text)
        return _select(doc, path_steps(path))
    except (ValueError, TypeError):
        return None


def dumps(v: Any) -> str:
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _scalar_string(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return v if isinstance(v, str) else dumps(v)


def _need_strings(e: Expression, types: list[DataType], n: int) -> None:
    for a, t in list(zip(e.args, types, strict=True))[:n]:
        if t.root != "STRING":
            raise ValidationException(f"{e.sql()}: argument {a.sql()} is {t}, expected STRING")


def _json_value(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """JSON_VALUE(json, path) -> STRING: the scalar at the path; NULL if missing, not a scalar, or not JSON.
    (RETURNING <type> arrives as a TRY_CAST around it: a value that does not convert is NULL ON ERROR.)"""
    _need_strings(e, types, 2)
    a, p = fns

    def f(row: Sequence[Any]) -> Any:
        text, path = a(row), p(row)
        if text is None or path is None:
            return None
        found = _matches(text, path)
        if not found or len(found) != 1 or isinstance(found[0], (dict, list)) or found[0] is None:
            return None
        return _scalar_string(found[0])

    return f, DataTypes.STRING()


def _json_query(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """JSON_QUERY(json, path) -> STRING: the object or array at the path as JSON text (WITHOUT WRAPPER: a
    scalar there is an error -> NULL ON ERROR)."""
    _need_strings(e, types, 2)
    a, p = fns

    def f(row: Sequence[Any]) -> Any:
        text, path = a(row), p(row)
        if text is None or path is None:
            return None
        found = _matches(text, path)
        if not found:
            return None
        if "*" in path:
            return None  # a wildcard selects a sequence: an error WITHOUT WRAPPER -> NULL ON ERROR
        v = found[0]
        return dumps(v) if isinstance(v, (dict, list)) else None

    return f, DataTypes.STRING()


def _json_exists(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """JSON_EXISTS(json, path) -> BOOLEAN (FALSE ON ERROR, Flink's default)."""
    _need_strings(e, types, 2)
    a, p = fns

    def f(row: Sequence[Any]) -> Any:
        text, path = a(row), p(row)
        if text is None or path is None:
            return None
        found = _matches(text, path)
        return bool(found)

    return f, DataTypes.BOOLEAN()


def _json_of(v: Any, t: DataType, raw: bool) -> Any:
    """A SQL value inside generated JSON: strings as strings (a nested JSON_OBJECT/JSON_ARRAY result as
    JSON), numbers and booleans as themselves, temporal values as their SQL strings."""
    if v is None or isinstance(v, (bool, int, float)):
        return v
    if raw and isinstance(v, str):
        return json.loads(v)
    if isinstance(v, str):
        return v
    return sql_string(v, t)


def _is_json_builder(a: Expression) -> bool:
    return a.op == "call" and a.name in ("json_object", "json_array")


def _json_object(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """JSON_OBJECT([KEY] k VALUE v, ...) -> STRING (NOT NULL); value = "ABSENT" drops NULL values."""
    if len(fns) % 2:
        raise ValidationException(f"{e.sql()}: JSON_OBJECT takes KEY .. VALUE .. pairs")
    for i in range(0, len(fns), 2):
        if types[i].root != "STRING":
            raise ValidationException(f"{e.sql()}: key {e.args[i].sql()} is {types[i]}, expected STRING")
    absent = e.value == "ABSENT"
    pairs = [(fns[i], fns[i + 1], types[i + 1], _is_json_builder(e.args[i + 1])) for i in range(0, len(fns), 2)]

    def f(row: Sequence[Any]) -> Any:
        out: dict[str, Any] = {}
        for k, v, t, raw in pairs:
            key, value = k(row), v(row)
            if key is None:
                raise ValueError(f"{e.sql()}: a JSON_OBJECT key is NULL")
            if value is None and absent:
                continue
            out[key] = _json_of(value, t, raw)
        return dumps(out)

    return f, DataTypes.STRING(False)


def _json_array(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """JSON_ARRAY(v, ...) -> STRING (NOT NULL); NULL values are left out unless value = "NULL"."""
    keep_null = e.value == "NULL"
    items = [(g, t, _is_json_builder(a)) for g, t, a in zip(fns, types, e.args, strict=True)]

    def f(row: Sequence[Any]) -> Any:
        out = []
        for g, t, raw in items:
            v = g(row)
            if v is None and not keep_null:
                continue
            out.append(_json_of(v, t, raw))
        return dumps(out)

    return f, DataTypes.STRING(False)


def _is_json(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """s IS JSON [VALUE | OBJECT | ARRAY | SCALAR] -> BOOLEAN (NULL input: FALSE, as Flink)."""
    _need_strings(e, types, 1)
    kind = str(e.value or "VALUE").upper()
    (a,) = fns

    def f(row: Sequence[Any]) -> bool:
        s = a(row)
        if s is None:
            return False
        try:
            v = json.loads(s)
        except ValueError:
            return False
        if kind == "OBJECT":
            return isinstance(v, dict)
        if kind == "ARRAY":
            return isinstance(v, list)
        if kind == "SCALAR":
            return not isinstance(v, (dict, list))
        return True

    return f, DataTypes.BOOLEAN(False)


CALLS: dict[str, Builder] = {
    "json_value": _json_value,
    "json_query": _json_query,
    "json_exists": _json_exists,
    "json_object": _json_object,
    "json_array": _json_array,
    "is_json": _is_json,
}
