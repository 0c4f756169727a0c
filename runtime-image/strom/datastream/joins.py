"""Window joins and co-groups (`ds1.join(ds2)`, `ds1.co_group(ds2)`), as Flink builds them.

Both inputs are tagged (`(1, value)` / `(2, value)`), unioned, keyed by the key of
their own side, and windowed; a window function splits each pane back into the two
sides and hands them to the CoGroupFunction. A join is a co-group that emits the cross
product of the two sides per key and window.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from strom.common.time import Duration
from strom.common.typeinfo import TypeInformation
from strom.datastream.functions import (
    CoGroupFunction,
    FlatJoinFunction,
    JoinFunction,
    KeySelector,
    MapFunction,
    WindowFunction,
    as_key_selector,
)
from strom.datastream.window import Evictor, Trigger, WindowAssigner

if TYPE_CHECKING:
    from strom.datastream.data_stream import DataStream


class _Tagger(MapFunction):
    def __init__(self, tag: int) -> None:
        self.tag = tag

    def map(self, value: Any) -> tuple[int, Any]:
        return (self.tag, value)


class _UnionKeySelector(KeySelector):
    """The key of a tagged element, by the key selector of its side."""

    def __init__(self, key1: KeySelector, key2: KeySelector) -> None:
        self.key1 = key1.get_key
        self.key2 = key2.get_key

    def get_key(self, value: tuple[int, Any]) -> Any:
        return self.key1(value[1]) if value[0] == 1 else self.key2(value[1])


class _CallableCoGroup(CoGroupFunction):
    def __init__(self, fn: Callable[[Iterable[Any], Iterable[Any]], Iterable[Any]]) -> None:
        self.fn = fn

    def co_group(self, first: Iterable[Any], second: Iterable[Any]) -> Iterable[Any]:
        return self.fn(first, second)


class _JoinCoGroup(CoGroupFunction):
    """Flink's JoinCoGroupFunction / FlatJoinCoGroupFunction: the cross product per pane."""

    def __init__(self, join: Any, flat: bool) -> None:
        self.join = join
        self.flat = flat

    def open(self, runtime_context: Any) -> None:
        self.join.open(runtime_context)

    def close(self) -> None:
        self.join.close()

    def co_group(self, first: Iterable[Any], second: Iterable[Any]) -> Iterable[Any]:
        join = self.join.join
        second = list(second)
        out: list[Any] = []
        for a in first:
            for b in second:
                if self.flat:
                    r = join(a, b)
                    if r is not None:
                        out.extend(r)
                else:
                    out.append(join(a, b))
        return out


class _CoGroupWindowFunction(WindowFunction):
    """Splits a pane of tagged elements into the two sides."""

    def __init__(self, function: CoGroupFunction) -> None:
        self.function = function

    def open(self, runtime_context: Any) -> None:
        self.function.open(runtime_context)

    def close(self) -> None:
        self.function.close()

    def apply(self, key: Any, window: Any, inputs: Iterable[Any]) -> Iterable[Any]:
        first = [v for tag, v in inputs if tag == 1]
        second = [v for tag, v in inputs if tag == 2]
        r = self.function.co_group(first, second)
        return () if r is None else r


class _TwoInputs:
    def __init__(self, input1: DataStream, input2: DataStream) -> None:
        self.input1 = input1
        self.input2 = input2
        self._what = "join" if isinstance(self, JoinedStreams) else "co_group"

    def where(self, key_selector: Any, key_type: TypeInformation | None = None) -> _Where:
        return _Where(self, as_key_selector(key_selector))


class _Where:
    def __init__(self, streams: _TwoInputs, key1: KeySelector) -> None:
        self._streams = streams
        self._key1 = key1

    def equal_to(self, key_selector: Any, key_type: TypeInformation | None = None) -> _EqualTo:
        return _EqualTo(self._streams, self._key1, as_key_selector(key_selector))

    equalTo = equal_to  # noqa: N815 - the Java name, as PyFlink users may write it


class _EqualTo:
    def __init__(self, streams: _TwoInputs, key1: KeySelector, key2: KeySelector) -> None:
        self._streams = streams
        self._key1 = key1
        self._key2 = key2

    def window(self, assigner: WindowAssigner) -> WithWindow:
        if not isinstance(assigner, WindowAssigner):
            raise TypeError(
                f"{self._streams._what}(...).window() expects a WindowAssigner, got {type(assigner).__name__}"
            )
        return WithWindow(self._streams, self._key1, self._key2, assigner)


class WithWindow:
    """A two-input window operation ready for its function."""

    def __init__(self, streams: _TwoInputs, key1: KeySelector, key2: KeySelector, assigner: WindowAssigner) -> None:
        self._streams = streams
        self._key1 = key1
        self._key2 = key2
        self._assigner = assigner
        self._trigger: Trigger | None = None
        self._evictor: Evictor | None = None
        self._allowed_lateness: Duration | int = 0

    def trigger(self, trigger: Trigger) -> WithWindow:
        self._trigger = trigger
        return self

    def evictor(self, evictor: Evictor) -> WithWindow:
        self._evictor = evictor
        return self

    def allowed_lateness(self, time_ms: Duration | int) -> WithWindow:
        self._allowed_lateness = time_ms
        return self

    def _co_group(self, function: CoGroupFunction, output_type: TypeInformation | None, name: str) -> DataStream:
        s = self._streams
        tagged1 = s.input1.map(_Tagger(1))
        tagged2 = s.input2.map(_Tagger(2))
        keyed = tagged1.union(tagged2).key_by(_UnionKeySelector(self._key1, self._key2))
        windowed = keyed.window(self._assigner)
        if self._trigger is not None:
            windowed.trigger(self._trigger)
        if self._evictor is not None:
            windowed.evictor(self._evictor)
        windowed.allowed_lateness(self._allowed_lateness)
        return windowed.apply(_CoGroupWindowFunction(function), output_type).name(name)

    def apply(self, function: Any, output_type: TypeInformation | None = None) -> DataStream:
        if isinstance(self._streams, JoinedStreams):
            if isinstance(function, FlatJoinFunction):
                cogroup: CoGroupFunction = _JoinCoGroup(function, flat=True)
            elif isinstance(function, JoinFunction):
                cogroup = _JoinCoGroup(function, flat=False)
            elif callable(function):
                cogroup = _JoinCoGroup(_CallableJoin(function), flat=False)
            else:
                raise TypeError(
                    f"join(...).apply() expects a JoinFunction, FlatJoinFunction or a function (a, b) -> out, "
                    f"got {type(function).__name__}"
                )
            return self._co_group(cogroup, output_type, f"Window Join({self._assigner!r})")
        if isinstance(function, CoGroupFunction):
            cogroup = function
        elif callable(function):
            cogroup = _CallableCoGroup(function)
        else:
            raise TypeError(
                f"co_group(...).apply() expects a CoGroupFunction or a function (first, second) -> iterable, "
                f"got {type(function).__name__}"
            )
        return self._co_group(cogroup, output_type, f"Window CoGroup({self._assigner!r})")


class _CallableJoin(JoinFunction):
    def __init__(self, fn: Callable[[Any, Any], Any]) -> None:
        self.fn = fn

    def join(self, value1: Any, value2: Any) -> Any:
        return self.fn(value1, value2)


class JoinedStreams(_TwoInputs):
    """`ds1.join(ds2).where(k1).equal_to(k2).window(assigner).apply(join_function)`."""


class CoGroupedStreams(_TwoInputs):
    """`ds1.co_group(ds2).where(k1).equal_to(k2).window(assigner).apply(co_group_function)`."""


__all__ = ["CoGroupedStreams", "JoinedStreams", "WithWindow"]
