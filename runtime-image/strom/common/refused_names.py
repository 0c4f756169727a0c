"""PyFlink names Strom does not provide, present so that using one is one clear line, not an ImportError.

`refused_name("FlinkKafkaConsumer", "...why...", "...instead...")` makes a class of that name: creating
it, calling it or reading any attribute of it (`Semantic.EXACTLY_ONCE`, `FileCompactStrategy.builder()`)
raises UnsupportedFeatureError naming it, saying why Strom lacks it and what to use instead. Importing it
works, so a program fails where it uses the name, with that line. docs/pyflink-parity.md lists every
such name with the same reason.
"""

from __future__ import annotations

from typing import Any, NoReturn

from strom.common.unsupported import UnsupportedFeatureError


def _refusal(name: str, why: str, instead: str) -> str:
    return f"{name} is not available in Strom: {why}; {instead} (see docs/pyflink-parity.md)"


class _Refusing(type):
    """The metaclass: any attribute of the class itself refuses (dunder names stay Python's)."""

    _refusal_text: str

    def __getattr__(cls, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise UnsupportedFeatureError(cls._refusal_text)

    def __call__(cls, *args: Any, **kwargs: Any) -> NoReturn:
        raise UnsupportedFeatureError(cls._refusal_text)


def refused_name(name: str, why: str, instead: str) -> type:
    """A class named `name` that refuses every use with one line (see the module docstring)."""
    return _Refusing(name, (), {"_refusal_text": _refusal(name, why, instead), "__doc__": f"Refused: {why}."})
