"""The API server's rules for a CRD's schema, checked without an API server.

A test emulator accepts any schema; kube-apiserver (apiextensions.k8s.io/v1, every version from
v1.19 on) refuses a CRD whose `openAPIV3Schema` is not *structural*, and a few more things. This is
a pure re-statement of those rules (Kubernetes' apiextensions validation and its structural schema
rules), so that CI catches what only a real server would: `crd_errors(build_crd())` must be empty.

The rules, in the server's words where it has them:
- every node has a `type` (object, array, string, integer, number, boolean), unless it says
  `x-kubernetes-int-or-string: true` (then no type) or `x-kubernetes-preserve-unknown-fields: true`;
- the root is `type: object`; its `metadata` may carry only `type: object` and restrictions of
  `name`/`generateName` ("must not specify anything other than name and generateName");
- `properties` and `additionalProperties` are mutually exclusive, and `additionalProperties: false`
  is not allowed; an array has one `items` schema (not a list);
- no `$ref`, `$schema`, `id`, `definitions`, `dependencies`, `patternProperties`,
  `additionalItems`, `uniqueItems: true`; no keyword the server does not know;
- inside `allOf`/`anyOf`/`oneOf`/`not`: no `type`, `description`, `default`, `nullable`,
  `additionalProperties`, and no field that the node does not declare outside them;
- `x-kubernetes-preserve-unknown-fields` is true or absent;
- `x-kubernetes-list-type` is atomic, set or map; `map` needs `x-kubernetes-list-map-keys`, each a
  scalar property of the object items that is required or has a default; `set` needs scalar items;
  `x-kubernetes-map-type` only on objects;
- a `default` validates against its own node and is unchanged by pruning (no unknown fields), it is
  not allowed at the root or in `metadata`, and `null` only where `nullable: true`;
- the scale subresource's paths are simple JSON paths, specReplicasPath under `.spec`,
  statusReplicasPath under `.status`, labelSelectorPath under either; and (our rule, not the server's:
  it accepts paths to nothing, and the scale subresource then reads nothing) each names a field of the
  schema, an integer for the replicas paths and a string for the selector.
CEL (`x-kubernetes-validations`) is refused too: v1.19 does not have it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from typing import Any

TYPES = ("object", "array", "string", "integer", "number", "boolean")
SCALARS = ("string", "integer", "number", "boolean")
JUNCTORS = ("allOf", "anyOf", "oneOf", "not")
# JSONSchemaProps' fields (apiextensions.k8s.io/v1); anything else fails to decode.
KNOWN = frozenset({
    "description", "type", "format", "title", "default", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "multipleOf",
    "enum", "maxProperties", "minProperties", "required", "items", "allOf", "oneOf", "anyOf", "not", "properties",
    "additionalProperties", "patternProperties", "dependencies", "additionalItems", "definitions", "externalDocs",
    "example", "nullable", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys", "x-kubernetes-list-type",
    "x-kubernetes-map-type", "x-kubernetes-validations",
})
FORBIDDEN = ("$ref", "$schema", "id", "definitions", "dependencies", "patternProperties", "additionalItems")
# Not known to the oldest server we support (v1.19): CEL came in v1.23 (beta v1.25).
TOO_NEW = ("x-kubernetes-validations",)
NOT_IN_JUNCTORS = ("type", "description", "default", "nullable", "additionalProperties")
METADATA_FIELDS = ("name", "generateName")
SIMPLE_PATH = re.compile(r"^(\.[A-Za-z0-9_-]+)+$")


def crd_errors(crd: Mapping[str, Any]) -> list[str]:
    """Everything the API server would refuse in this CRD, one line each with its path."""
    errors: list[str] = []
    for i, version in enumerate(crd.get("spec", {}).get("versions") or ()):
        where = f"spec.versions[{i}]"
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema is None:
            errors.append(f"{where}.schema.openAPIV3Schema: Required: a v1 CRD needs a schema")
            continue
        errors += schema_errors(schema, f"{where}.schema.openAPIV3Schema")
        scale = (version.get("subresources") or {}).get("scale")
        if scale is not None:
            errors += _scale_errors(scale, schema, f"{where}.subresources.scale")
    return errors


def schema_errors(schema: Mapping[str, Any], path: str = "openAPIV3Schema") -> list[str]:
    """The structural-schema errors of a CRD's root schema."""
    errors = list(_node_errors(schema, path, junctor=False))
    if schema.get("type") != "object":
        errors.append(f"{path}.type: Invalid value: {schema.get('type')!r}: must be object at the root")
    for key in ("default", "nullable"):
        if key in schema:
            errors.append(f"{path}.{key}: Forbidden: must not be set at the root")
    metadata = (schema.get("properties") or {}).get("metadata")
    if metadata is not None:
        errors += _metadata_errors(metadata, f"{path}.properties[metadata]")
    return errors


def _metadata_errors(node: Mapping[str, Any], path: str) -> list[str]:
    errors = [f"{path}.{key}: Forbidden: must not specify anything other than name and generateName"
              for key in node if key not in ("type", "properties")]
    if node.get("type") != "object":
        errors.append(f"{path}.type: Invalid value: {node.get('type')!r}: must be object")
    for name, sub in (node.get("properties") or {}).items():
        if name not in METADATA_FIELDS:
            errors.append(f"{path}.properties[{name}]: Forbidden: must not specify anything other than name "
                          "and generateName")
        elif sub.get("type") != "string" or "default" in sub:
            errors.append(f"{path}.properties[{name}]: Invalid value: must be a string without a default")
    return errors


def _node_errors(node: Any, path: str, *, junctor: bool) -> Iterator[str]:
    if not isinstance(node, Mapping):
        yield f"{path}: Invalid value: a schema must be an object, not {type(node).__name__}"
        return
    for key in node:
        if key not in KNOWN:
            yield f"{path}.{key}: Invalid value: unknown field (not a JSONSchemaProps field)"
        elif key in FORBIDDEN:
            yield f"{path}.{key}: Forbidden: {key} is not supported"
        elif key in TOO_NEW:
            yield f"{path}.{key}: Forbidden: CEL rules need Kubernetes v1.25+, and v1.19 is supported"
    if node.get("uniqueItems") is True:
        yield f"{path}.uniqueItems: Forbidden: uniqueItems cannot be true, use x-kubernetes-list-type: set"
    if "x-kubernetes-preserve-unknown-fields" in node and node["x-kubernetes-preserve-unknown-fields"] is not True:
        yield f"{path}.x-kubernetes-preserve-unknown-fields: Invalid value: must be true or undefined"
    type_ = node.get("type")
    if junctor:
        for key in NOT_IN_JUNCTORS:
            if key in node:
                yield f"{path}.{key}: Forbidden: must be empty to be structural (inside allOf/anyOf/oneOf/not)"
    elif node.get("x-kubernetes-int-or-string") is True:
        if type_ is not None:
            yield f"{path}.type: Forbidden: must be empty with x-kubernetes-int-or-string"
    elif type_ is None:
        if node.get("x-kubernetes-preserve-unknown-fields") is not True:
            yield f"{path}.type: Required: must not be empty for specified object fields"
    elif type_ not in TYPES:
        yield f"{path}.type: Unsupported value: {type_!r}: supported values: {', '.join(TYPES)}"
    if "properties" in node and "additionalProperties" in node:
        yield f"{path}.additionalProperties: Forbidden: additionalProperties and properties are mutually exclusive"
    if node.get("additionalProperties") is False:
        yield f"{path}.additionalProperties: Forbidden: additionalProperties: false is not supported"
    if type_ == "array" and not junctor:
        if "items" not in node:
            yield f"{path}.items: Required: must be specified for arrays"
        elif not isinstance(node["items"], Mapping):
            yield f"{path}.items: Forbidden: items must be a single schema, not a list"
    if type_ is not None and type_ != "object" and ("properties" in node or "additionalProperties" in node):
        yield f"{path}.properties: Forbidden: only objects have properties"
    if "x-kubernetes-map-type" in node:
        if node["x-kubernetes-map-type"] not in ("atomic", "granular"):
            yield f"{path}.x-kubernetes-map-type: Unsupported value: must be atomic or granular"
        if type_ != "object":
            yield f"{path}.x-kubernetes-map-type: Invalid value: only for objects"
    yield from _list_type_errors(node, path)
    if "default" in node and not junctor:
        yield from _default_errors(node, path)
    for name, sub in (node.get("properties") or {}).items():
        yield from _node_errors(sub, f"{path}.properties[{name}]", junctor=junctor)
    if isinstance(node.get("additionalProperties"), Mapping):
        yield from _node_errors(node["additionalProperties"], f"{path}.additionalProperties", junctor=junctor)
    if isinstance(node.get("items"), Mapping):
        yield from _node_errors(node["items"], f"{path}.items", junctor=junctor)
    for key in JUNCTORS:
        branches = node.get(key)
        if branches is None:
            continue
        for i, branch in enumerate([branches] if key == "not" else branches):
            where = f"{path}.{key}" if key == "not" else f"{path}.{key}[{i}]"
            yield from _node_errors(branch, where, junctor=True)
            yield from _undeclared_in_junctor(node, branch, where)


def _undeclared_in_junctor(node: Mapping[str, Any], branch: Any, path: str) -> Iterator[str]:
    """A junctor may only restrict what the node itself declares."""
    if not isinstance(branch, Mapping):
        return
    declared = node.get("properties") or {}
    for name in branch.get("properties") or {}:
        if name not in declared and node.get("x-kubernetes-preserve-unknown-fields") is not True:
            yield f"{path}.properties[{name}]: Required: must be specified outside of allOf/anyOf/oneOf/not too"


def _list_type_errors(node: Mapping[str, Any], path: str) -> Iterator[str]:
    list_type = node.get("x-kubernetes-list-type")
    keys = node.get("x-kubernetes-list-map-keys")
    if keys is not None and list_type != "map":
        yield f"{path}.x-kubernetes-list-map-keys: Forbidden: only with x-kubernetes-list-type: map"
    if list_type is None:
        return
    if list_type not in ("atomic", "set", "map"):
        yield f"{path}.x-kubernetes-list-type: Unsupported value: {list_type!r}: must be atomic, set or map"
        return
    if node.get("type") != "array":
        yield f"{path}.x-kubernetes-list-type: Invalid value: only for arrays"
        return
    raw_items = node.get("items")
    items: Mapping[str, Any] = raw_items if isinstance(raw_items, Mapping) else {}
    if list_type == "set" and items.get("type") not in SCALARS:
        yield f"{path}.items.type: Invalid value: a set's items must be scalars"
    if list_type != "map":
        return
    if items.get("type") != "object":
        yield f"{path}.items.type: Invalid value: a map list's items must be objects"
        return
    if not keys:
        yield f"{path}.x-kubernetes-list-map-keys: Required: must not be empty with x-kubernetes-list-type: map"
        return
    properties = items.get("properties") or {}
    for key in keys:
        field = properties.get(key)
        if field is None:
            yield f"{path}.x-kubernetes-list-map-keys: Invalid value: {key!r}: not a property of the items"
        elif field.get("type") not in SCALARS:
            yield f"{path}.items.properties[{key}].type: Invalid value: a list map key must be a scalar"
        elif key not in (items.get("required") or ()) and "default" not in field:
            yield f"{path}.items.properties[{key}]: Required: a list map key must be required or have a default"


def _default_errors(node: Mapping[str, Any], path: str) -> Iterator[str]:
    value = node["default"]
    if value is None:
        if node.get("nullable") is not True:
            yield f"{path}.default: Invalid value: null: only with nullable: true"
        return
    for where, message in value_errors(node, value):
        yield f"{path}.default{where}: Invalid value: {message}"
    pruned = prune(node, copy.deepcopy(value))
    if pruned != value:
        yield f"{path}.default: Invalid value: must not have unknown fields (pruning changes it to {pruned!r})"


_PYTHON_TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,),
                                             "integer": (int,), "number": (int, float), "boolean": (bool,)}


def value_errors(node: Mapping[str, Any], value: Any, where: str = "") -> Iterator[tuple[str, str]]:
    """(path, message) of each way `value` breaks the keywords our schemas use (type, enum, bounds,
    pattern, required, and those of nested nodes): what the server checks a default against."""
    type_ = node.get("type")
    if type_ in _PYTHON_TYPES and (not isinstance(value, _PYTHON_TYPES[type_])
                                   or (isinstance(value, bool) and type_ != "boolean")):
        yield where, f"{value!r} is not of type {type_!r}"
        return
    if "enum" in node and value not in node["enum"]:
        yield where, f"{value!r} is not one of {node['enum']}"
    if "minimum" in node and value < node["minimum"]:
        yield where, f"{value!r} is less than the minimum of {node['minimum']}"
    if "maximum" in node and value > node["maximum"]:
        yield where, f"{value!r} is greater than the maximum of {node['maximum']}"
    if "pattern" in node and isinstance(value, str) and not re.search(node["pattern"], value):
        yield where, f"{value!r} does not match {node['pattern']!r}"
    if isinstance(value, dict):
        for name in node.get("required") or ():
            if name not in value:
                yield where, f"{name!r} is a required property"
        properties, extra = node.get("properties") or {}, node.get("additionalProperties")
        for k, v in value.items():
            sub = properties.get(k, extra if isinstance(extra, Mapping) else None)
            if sub is not None:
                yield from value_errors(sub, v, f"{where}[{k}]")
    if isinstance(value, list) and isinstance(node.get("items"), Mapping):
        for i, v in enumerate(value):
            yield from value_errors(node["items"], v, f"{where}[{i}]")


def prune(node: Mapping[str, Any], value: Any) -> Any:
    """`value` without the fields the schema does not know, as the API server prunes it."""
    if node.get("x-kubernetes-preserve-unknown-fields") is True and "properties" not in node:
        return value
    if isinstance(value, dict) and node.get("type") == "object":
        properties = node.get("properties")
        if properties is not None:
            keep_unknown = node.get("x-kubernetes-preserve-unknown-fields") is True
            return {k: prune(properties[k], v) if k in properties else v
                    for k, v in value.items() if k in properties or keep_unknown}
        extra = node.get("additionalProperties")
        if isinstance(extra, Mapping):
            return {k: prune(extra, v) for k, v in value.items()}
        return {}
    if isinstance(value, list) and isinstance(node.get("items"), Mapping):
        return [prune(node["items"], v) for v in value]
    return value


def _scale_errors(scale: Mapping[str, Any], schema: Mapping[str, Any], path: str) -> list[str]:
    errors = []
    wanted = {"specReplicasPath": ((".spec.",), ("integer",)),
              "statusReplicasPath": ((".status.",), ("integer",)),
              "labelSelectorPath": ((".spec.", ".status."), ("string",))}
    for key, (roots, types) in wanted.items():
        value = scale.get(key)
        if value is None:
            if key != "labelSelectorPath":
                errors.append(f"{path}.{key}: Required")
            continue
        if not SIMPLE_PATH.match(value) or not value.startswith(roots):
            errors.append(f"{path}.{key}: Invalid value: {value!r}: should be a json path under "
                          + " or ".join(r.rstrip(".") for r in roots))
            continue
        node: Mapping[str, Any] | None = schema
        for part in value.strip(".").split("."):
            node = ((node or {}).get("properties") or {}).get(part)
        if node is None or node.get("type") not in types:
            errors.append(f"{path}.{key}: Invalid value: {value!r}: must point at a {' or '.join(types)} field "
                          "of the schema")
    return errors
