"""`Configuration`: PyFlink's key-value configuration, validated against the option registry."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar, overload

from strom.common import tls_options  # noqa: F401 - registers Flink's security.ssl.* keys with OPTIONS
from strom.common.config_options import OPTIONS, ConfigError, ConfigOption, option_for_deprecated_key
from strom.common.sensitive_keys import is_sensitive_key, masked

log = logging.getLogger(__name__)

T = TypeVar("T")


def current_key(key: str) -> str:
    """`key`, or the key that replaced it when `key` is a deprecated key Flink still accepts; a deprecated key
    is logged at WARNING naming the new key, as Flink logs it."""
    if key in OPTIONS:
        return key
    opt = option_for_deprecated_key(key)
    if opt is None:
        return key
    log.warning("configuration key '%s' is deprecated; use '%s' instead", key, opt.key)
    return opt.key


def validate_key(key: str) -> ConfigOption[Any] | None:
    """Known keys return their option. Unknown keys are an error, except pass-through
    namespaces that other systems own (Spark's, Python logging, user `strom.user.*`)."""
    opt = OPTIONS.get(key)
    if opt is not None:
        return opt
    if key.startswith(("spark.", "strom.user.", "env.", "kubernetes.", "s3.", "state.", "execution.checkpointing.",
                       "restart-strategy.", "metrics.", "heartbeat.", "high-availability")):
        return None  # validated by the component that owns the namespace
    close = sorted(k for k in OPTIONS if k.split(".")[0] == key.split(".")[0])
    hint = f"; known keys in this namespace: {', '.join(close)}" if close else ""
    raise ConfigError(f"unknown configuration key {key!r}{hint}")


class Configuration:
    """Typed configuration. Values are parsed and checked when set, so errors surface early."""

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = {}
        for k, v in (values or {}).items():
            self.set(k, v)

    def set(self, key: str, value: Any) -> Configuration:
        new_key = current_key(key)
        if new_key != key:
            if new_key in self._values:
                return self  # Flink: the current key wins over its deprecated one
            key = new_key
        opt = validate_key(key)
        self._values[key] = opt.parse(value) if opt is not None else value
        return self

    @overload
    def get(self, key: ConfigOption[T]) -> T: ...

    @overload
    def get(self, key: str, default: Any = None) -> Any: ...  # Any: a key names a value of any option's type

    def get(self, key: str | ConfigOption[Any], default: Any = None) -> Any:
        if isinstance(key, ConfigOption):
            return self._values.get(key.key, key.default)
        key = current_key(key)
        if key in self._values:
            return self._values[key]
        opt = OPTIONS.get(key)
        if default is None and opt is not None:
            return opt.default
        return default

    def contains_key(self, key: str) -> bool:
        return current_key(key) in self._values

    def remove_config(self, key: str) -> bool:
        """PyFlink's remove_config: drop `key`; True if it was set."""
        return self._values.pop(key, None) is not None

    # PyFlink's typed setters and getters
    def set_string(self, key: str, value: str) -> Configuration:
        return self.set(key, value)

    def set_integer(self, key: str, value: int) -> Configuration:
        return self.set(key, value)

    def set_boolean(self, key: str, value: bool) -> Configuration:
        return self.set(key, value)

    def get_string(self, key: str, default_value: str = "") -> str:
        v = self.get(key, default_value)
        return str(v) if v is not None else default_value

    def get_integer(self, key: str, default_value: int = 0) -> int:
        v = self.get(key, default_value)
        return int(v) if v is not None else default_value

    def get_boolean(self, key: str, default_value: bool = False) -> bool:
        v = self.get(key, default_value)
        return bool(v) if v is not None else default_value

    def add_all(self, other: Configuration | Mapping[str, Any]) -> Configuration:
        items: Iterable[tuple[str, Any]] = (
            other._values.items() if isinstance(other, Configuration) else other.items()
        )
        for k, v in items:
            self.set(k, v)
        return self

    def to_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def keys(self) -> list[str]:
        return list(self._values)

    def copy(self) -> Configuration:
        c = Configuration()
        c._values = dict(self._values)
        return c

    def __repr__(self) -> str:
        shown = {k: masked(k, v) for k, v in self._values.items()}
        return f"Configuration({shown!r})"


# Kept for callers of the old private name; the rule lives in strom.common.sensitive_keys.
_is_secret = is_sensitive_key
