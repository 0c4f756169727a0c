"""Fixtures of the keyed state contract suite: every test here runs against every state backend.

As Quix Streams runs one suite of store behaviours against its memory and RocksDB stores: a
behaviour a backend must have is written once, and a new backend joins by adding its name to
BACKENDS. Tests use only the state API (`strom.runtime.state.api` and `backends`), never a
backend's modules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from strom.common.configuration import Configuration
from strom.common.key_groups import KeyGroupRange
from strom.runtime.state.api import KeyedStateBackend
from strom.runtime.state.backends import create_keyed_state_backend
from strom.runtime.state.timers import InternalTimer, InternalTimerService
from strom.runtime.tasks.processing_time import ManualClock, ProcessingTimeService

BACKENDS = ["hashmap", "rocksdb"]
MAX_P = 128
UID = "contract-uid"

MakeBackend = Callable[..., KeyedStateBackend]


def new_backend(kind: str, *, clock: ManualClock | None = None, rng: KeyGroupRange | None = None) -> KeyedStateBackend:
    return create_keyed_state_backend(
        Configuration({"state.backend.type": kind}),
        max_parallelism=MAX_P,
        key_group_range=rng or KeyGroupRange(0, MAX_P - 1),
        clock=clock or ManualClock(0),
        operator_name="contract",
        operator_uid=UID,
    )


class Timers:
    """A timer service over a backend, recording what fires as (timestamp, key, namespace)."""

    def __init__(self, backend: KeyedStateBackend) -> None:
        self.fired: list[tuple[int, Any, Any]] = []
        self.pts = ProcessingTimeService(ManualClock(0))
        self.service = InternalTimerService(
            backend=backend,
            on_event_time=self._fire,
            on_processing_time=self._fire,
            processing_time_service=self.pts,
        )
        self.backend = backend

    def _fire(self, timer: InternalTimer) -> None:
        # the timer's key is the current key while it fires
        assert self.backend.current_key == timer.key
        self.fired.append((timer.timestamp, timer.key, timer.namespace))


@pytest.fixture(params=BACKENDS)
def backend_kind(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture
def make_backend(backend_kind: str) -> Iterator[MakeBackend]:
    """Backends of the parametrized kind, closed after the test."""
    made: list[KeyedStateBackend] = []

    def make(**kw: Any) -> KeyedStateBackend:
        be = new_backend(backend_kind, **kw)
        made.append(be)
        return be

    yield make
    for be in made:
        be.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(0)
