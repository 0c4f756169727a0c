"""When a FlinkJob's daemon runs its next pass: at the delay the last pass asked for, or earlier for news.

The daemon (handlers.follow) is the only runner of a FlinkJob's passes. News that warrants a pass before
the delay is up: a spec the last pass has not seen (kopf's create/update-on-spec/resume handlers report
the object's metadata.generation), or an explicit request (the autoscaler wrote a rescale). Everything
else waits for the delay, in particular the operator's own status patches: kopf sees each of them as an
update of the FlinkJob, and a pass per patch is what once turned a refused first deployment into three
attempts within 90 ms, ahead of the back-off (action_failures.retry_delay).

Why a generation and not kopf's own change detection alone: kopf starts the daemon before it calls the
creation handler, so the daemon's first pass has usually seen generation 1 already when the handler says
"created"; comparing generations makes that report (and a resume's) no news, and a real spec change
(generation + 1) news even during a back-off (the user may have fixed what failed).
"""

from __future__ import annotations

import asyncio
from typing import Any


def is_news(requested: int | None, seen: int | None) -> bool:
    """A spec generation the daemon's last pass has not read. Unknown generations are news (better a
    pass too many than a change missed)."""
    return requested is not None and (seen is None or requested > seen)


class Wakeup:
    """One FlinkJob's: set by the handlers, waited on by its daemon."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._generation: int | None = None
        self._now = False

    def spec_changed(self, generation: int | None) -> None:
        if generation is not None:
            self._generation = max(generation, self._generation or 0)
            self._event.set()

    def now(self) -> None:
        self._now = True
        self._event.set()

    def _take(self, seen: int | None) -> bool:
        due = self._now or is_news(self._generation, seen)
        self._now = False
        self._event.clear()
        return due

    async def wait(self, timeout: float, *, seen: int | None, stopped: Any) -> None:
        """Until `timeout` is up, `stopped` (kopf's daemon flag: `await stopped.wait()`) is set, or news comes
        that a pass which read generation `seen` has not handled. News from during that pass counts."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        halted = asyncio.ensure_future(stopped.wait())
        try:
            while not self._take(seen):
                remaining = deadline - loop.time()
                if remaining <= 0 or halted.done():
                    return
                woken = asyncio.ensure_future(self._event.wait())
                try:
                    await asyncio.wait({woken, halted}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    woken.cancel()
        finally:
            halted.cancel()
