"""Flink's JSON functions: JSON_VALUE, JSON_QUERY, JSON_EXISTS, JSON_OBJECT, JSON_ARRAY and IS JSON,
merged into strom.table.planner.scalar's call table.

Paths are SQL/JSON path expressions ('$', 'lax $.a.b', 'strict $.a[0]', '$["a b"]', '$.a[*]'); Flink's
defaults: strict mode when the path names none, NULL ON EMPTY and NULL ON ERROR, JSON_QUERY WITHOUT
WRAPPER, JSON_OBJECT NULL ON NULL,
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
_STEP = re.compile(r"\.(\w+)|\.\"([^\"]*)\"|\[\s*(\d+|\*)\s*\]|\.?\[\s*['\"]([^'\"]*)['\"]\s*\]|\.\*")


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


class _Empty:
    """What a path selects when it selects nothing (lax mode)."""


_EMPTY = _Empty()


def _evaluate(text: str, path: str) -> Any:
    """The value the path selects in the JSON text: one value for a definite path, the list of matches for
    one with a wildcard, _EMPTY when lax mode finds nothing. Raises ValueError (an error for ON ERROR) for
    text that is not JSON, a path that cannot be read, and, in strict mode (Flink's default when the path
    names no mode), a step that does not exist."""
    spec = path.strip()
    strict = not spec.lower().startswith("lax ")
    if spec.lower().startswith("strict "):
        spec = spec[7:].strip()
    try:
        doc = json.loads(text)
    except ValueError:
        raise ValueError(f"the input is not JSON: {text[:40]!r}") from None
    steps = path_steps(spec)
    current = [doc]
    for step in steps:
        out = []
        for v in current:
            if step == "*":
                out.extend(v if isinstance(v, list) else v.values() if isinstance(v, dict) else [])
            elif isinstance(step, int) and isinstance(v, list) and step < len(v):
                out.append(v[step])
            elif isinstance(step, str) and isinstance(v, dict) and step in v:
                out.append(v[step])
            elif strict:
                raise ValueError(f"No results for path: {path}")
        current = out
    if "*" in steps:
        return current
    return current[0] if current else _EMPTY


def _is_scalar(v: Any) -> bool:
    return not isinstance(v, (dict, list))


def _default_of(mode: str, default: Fn | None, row: Sequence[Any], function: str, when: str, error: str) -> Any:
    if mode == "ERROR":
        raise ValueError(error if when == "ERROR" else f"Empty result of {function} function is not allowed")
    if mode == "DEFAULT" and default is not None:
        return default(row)
    return None


def _json_value(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """JSON_VALUE(json, path) -> STRING: the scalar at the path; NULL when it is missing, JSON null, not a
    scalar or not JSON (Flink's NULL ON EMPTY and NULL ON ERROR)."""
    _need_strings(e, types, 2)
    return _json_value_of(e, fns[0], fns[1], DataTypes.STRING(), ("NULL", None), ("NULL", None))


def _json_value_ex(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """JSON_VALUE(json, path [RETURNING t] [b ON EMPTY] [b ON ERROR]) as function_syntax rewrote it:
    (json, path, CAST(NULL AS t) or NULL, empty mode, empty default, error mode, error default)."""
    _need_strings(e, types, 2)
    target = types[2] if e.args[2].op == "call" and e.args[2].name == "cast" else DataTypes.STRING()
    modes = [str(e.args[i].value) for i in (3, 5)]
    defaults: list[Fn | None] = []
    for mode, i in zip(modes, (4, 6), strict=True):
        if mode != "DEFAULT":
            defaults.append(None)
            continue
        defaults.append(_cast_to(e, fns[i], types[i], target, f"the DEFAULT {e.args[i].sql()}"))
    return _json_value_of(e, fns[0], fns[1], target.nullable_(), (modes[0], defaults[0]), (modes[1], defaults[1]))


def _cast_to(e: Expression, fn: Fn, source: DataType, target: DataType, what: str) -> Fn:
    from strom.table.planner.scalar import cast_value

    if source.root == target.root:
        return fn
    sql = _call_text("JSON_VALUE", e)
    return lambda row: cast_value(fn(row), source, target, False, f"{sql}: {what}")


def _call_text(name: str, e: Expression) -> str:
    """`JSON_VALUE(json, path)` as the user wrote its two arguments (errors name it so, not the _EX form)."""
    return f"{name}({e.args[0].sql()}, {e.args[1].sql()})"


def _json_value_of(e: Expression, a: Fn, p: Fn, target: DataType, on_empty: tuple[str, Fn | None],
                   on_error: tuple[str, Fn | None]) -> tuple[Fn, DataType]:
    from strom.table.planner.scalar import cast_value

    convert = target.root != "STRING"
    sql = _call_text("JSON_VALUE", e)

    def f(row: Sequence[Any]) -> Any:
        text, path = a(row), p(row)
        if text is None or path is None:
            return None
        try:
            v = _evaluate(text, path)
            lax = path.strip().lower().startswith("lax ")
            if v is _EMPTY or v is None or (lax and not _is_scalar(v)):
                return _default_of(*on_empty, row, "JSON_VALUE", "EMPTY", "")
            if not _is_scalar(v):
                raise ValueError(f"Strict jsonpath mode requires scalar value, and the actual value is: "
                                 f"'{dumps(v)}'")
            value = _scalar_string(v)
            return cast_value(value, DataTypes.STRING(), target, False, sql) if convert else value
        except ValueError as error:
            if str(error).startswith("Empty result of"):
                raise
            return _default_of(*on_error, row, "JSON_VALUE", "ERROR", f"{sql}: {error}")

    return f, target


_WRAPPERS = ("WITHOUT", "CONDITIONAL", "UNCONDITIONAL")
_QUERY_FALLBACK = {"NULL": None, "EMPTY ARRAY": "[]", "EMPTY OBJECT": "{}"}


def _json_query(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """JSON_QUERY(json, path) -> STRING: the object or array at the path as JSON text (WITHOUT WRAPPER: a
    scalar there is NULL, by NULL ON EMPTY in lax mode and NULL ON ERROR in strict mode)."""
    _need_strings(e, types, 2)
    return _json_query_of(e, fns[0], fns[1], "WITHOUT", "NULL", "NULL")


def _json_query_ex(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """JSON_QUERY(json, path [wrapper] [b ON EMPTY] [b ON ERROR]) as (json, path, wrapper, empty, error)."""
    _need_strings(e, types, 2)
    wrapper, on_empty, on_error = (str(a.value) for a in e.args[2:5])
    return _json_query_of(e, fns[0], fns[1], wrapper, on_empty, on_error)


def _json_query_of(e: Expression, a: Fn, p: Fn, wrapper: str, on_empty: str, on_error: str) -> tuple[Fn, DataType]:
    sql = _call_text("JSON_QUERY", e)

    def fallback(mode: str, message: str) -> Any:
        if mode == "ERROR":
            raise ValueError(message)
        return _QUERY_FALLBACK[mode]

    def f(row: Sequence[Any]) -> Any:
        text, path = a(row), p(row)
        if text is None or path is None:
            return None
        try:
            v = _evaluate(text, path)
        except ValueError as error:
            return fallback(on_error, f"{sql}: {error}")
        found = None if v is _EMPTY else v
        if wrapper == "UNCONDITIONAL" or (wrapper == "CONDITIONAL" and not isinstance(found, list)):
            found = [found]
        lax = path.strip().lower().startswith("lax ")
        if found is None or (lax and _is_scalar(found)):
            return fallback(on_empty, "Empty result of JSON_QUERY function is not allowed")
        if _is_scalar(found):
            return fallback(on_error, f"{sql}: Strict jsonpath mode requires array or object value, and the actual "
                                      f"value is: '{_scalar_string(found)}'")
        return dumps(found)

    return f, DataTypes.STRING()


def _json_exists(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """JSON_EXISTS(json, path) -> BOOLEAN (FALSE ON ERROR, Flink's default)."""
    _need_strings(e, types, 2)
    return _json_exists_of(e, fns[0], fns[1], "FALSE")


def _json_exists_ex(e: Expression, fns: list[Fn], types: list[DataType]) -> tuple[Fn, DataType]:
    """JSON_EXISTS(json, path {TRUE | FALSE | UNKNOWN | ERROR} ON ERROR) as (json, path, mode)."""
    _need_strings(e, types, 2)
    return _json_exists_of(e, fns[0], fns[1], str(e.args[2].value))


def _json_exists_of(e: Expression, a: Fn, p: Fn, on_error: str) -> tuple[Fn, DataType]:
    sql = _call_text("JSON_EXISTS", e)
    fallback = {"TRUE": True, "FALSE": False, "UNKNOWN": None}

    def f(row: Sequence[Any]) -> Any:
        text, path = a(row), p(row)
        if text is None or path is None:
            return None
        try:
            v = _evaluate(text, path)
        except ValueError as error:
            if on_error == "ERROR":
                raise ValueError(f"{sql}: {error}") from None
            return fallback[on_error]
        return v is not _EMPTY and v is not None

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
    "json_value_ex": _json_value_ex,
    "json_query_ex": _json_query_ex,
    "json_exists_ex": _json_exists_ex,
    "json_object": _json_object,
    "json_array": _json_array,
    "is_json": _is_json,
}
