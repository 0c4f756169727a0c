"""Builders for OpenAPI v3 schema nodes, and API-server style defaulting.

The FlinkJob CRD is written in Python (schema_spec.py, schema_status.py) with these
helpers so that every node carries a type and a description, and so that the operator
applies exactly the defaults the API server applies (`apply_defaults`): one source of
truth for both.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

Schema = dict[str, Any]


def string(description: str, *, enum: Sequence[str] = (), default: str | None = None,
           pattern: str | None = None) -> Schema:
    node: Schema = {"type": "string", "description": description}
    if enum:
        node["enum"] = list(enum)
    if default is not None:
        node["default"] = default
    if pattern is not None:
        node["pattern"] = pattern
    return node


def integer(description: str, *, minimum: int | None = None, maximum: int | None = None,
            default: int | None = None) -> Schema:
    node: Schema = {"type": "integer", "description": description}
    if minimum is not None:
        node["minimum"] = minimum
    if maximum is not None:
        node["maximum"] = maximum
    if default is not None:
        node["default"] = default
    return node


def boolean(description: str, *, default: bool | None = None) -> Schema:
    node: Schema = {"type": "boolean", "description": description}
    if default is not None:
        node["default"] = default
    return node


def array(description: str, items: Schema) -> Schema:
    return {"type": "array", "description": description, "items": items}


def obj(description: str, properties: Mapping[str, Schema], *, required: Sequence[str] = (),
        default: dict[str, Any] | None = None) -> Schema:
    """An object with known fields. `default={}` makes the API server create the object
    when it is absent, so that the defaults of its fields apply too."""
    node: Schema = {"type": "object", "description": description, "properties": dict(properties)}
    if required:
        node["required"] = list(required)
    if default is not None:
        node["default"] = default
    return node


def free_object(description: str) -> Schema:
    """An object whose fields Kubernetes keeps as they are (pod templates, stored specs)."""
    return {"type": "object", "description": description, "x-kubernetes-preserve-unknown-fields": True}


def list_map(description: str, items: Schema, *, keys: Sequence[str]) -> Schema:
    """An associative list (`x-kubernetes-list-type: map`): one element per key, merged by key under
    server-side apply. The keys must be required (or defaulted) scalar fields of the items."""
    return {**array(description, items), "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


def string_map(description: str) -> Schema:
    return {"type": "object", "description": description, "additionalProperties": {"type": "string"}}


def apply_defaults(schema: Schema, value: Any) -> Any:
    """Return a copy of `value` with the schema's defaults filled in, as the API server does:
    a missing field with a default gets it (and then its own nested defaults); fields
    present are kept; unknown fields are kept (pruning is the API server's job)."""
    if schema.get("type") == "object" and isinstance(value, dict) and "properties" in schema:
        out = dict(value)
        for name, sub in schema["properties"].items():
            if name not in out and "default" in sub:
                out[name] = copy.deepcopy(sub["default"])
            if name in out:
                out[name] = apply_defaults(sub, out[name])
        return out
    if schema.get("type") == "array" and isinstance(value, list):
        return [apply_defaults(schema["items"], v) for v in value]
    return copy.deepcopy(value)


def missing_descriptions(schema: Schema, path: str = "") -> list[str]:
    """Paths of schema nodes without a description (the CRD must read well in `kubectl explain`).
    The root `metadata` is exempt: the API server forbids describing it (kubectl explains it anyway)."""
    missing = [] if schema.get("description") else [path or "<root>"]
    for name, sub in schema.get("properties", {}).items():
        if not path and name == "metadata":
            continue
        missing += missing_descriptions(sub, f"{path}.{name}" if path else name)
    if "items" in schema and schema["items"].get("type") == "object":
        missing += missing_descriptions(schema["items"], f"{path}[]")
    return missing
