"""When the FlinkJob's daemon runs a pass before its delay is up (wakeups.py): for a spec generation its
last pass has not read, or when asked; never for a report of what it has seen (kopf's create handler after
the daemon's first pass, a resume, the operator's own status patches, which report nothing at all)."""

from __future__ import annotations

import asyncio

from strom_operator.reconcile.wakeups import Wakeup, is_news


class Flag:
    """kopf's daemon `stopped` flag, as far as the wait uses it."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    async def wait(self) -> None:
        await self.event.wait()


def test_news_is_a_generation_newer_than_the_last_pass_read():
    assert is_news(2, 1) and is_news(1, None)
    assert not is_news(1, 1) and not is_news(1, 2) and not is_news(None, 1)


async def _waited(wakeup: Wakeup, *, seen: int | None, timeout: float, act=None, stopped: Flag | None = None) -> float:
    loop = asyncio.get_running_loop()
    start = loop.time()
    task = asyncio.ensure_future(wakeup.wait(timeout, seen=seen, stopped=stopped or Flag()))
    await asyncio.sleep(0)
    if act is not None:
        act()
    await task
    return loop.time() - start


def test_a_report_of_the_generation_already_read_does_not_cut_the_delay_short():
    wakeup = Wakeup()
    waited = asyncio.run(_waited(wakeup, seen=1, timeout=0.3, act=lambda: wakeup.spec_changed(1)))
    assert waited >= 0.3


def test_a_new_generation_or_an_explicit_request_does():
    wakeup = Wakeup()
    assert asyncio.run(_waited(wakeup, seen=1, timeout=5, act=lambda: wakeup.spec_changed(2))) < 1
    asyncio.run(_waited(wakeup, seen=2, timeout=0.05))  # the next wait, after a pass that read 2: no news left
    now = Wakeup()
    assert asyncio.run(_waited(now, seen=7, timeout=5, act=now.now)) < 1
    assert asyncio.run(_waited(now, seen=7, timeout=0.2)) >= 0.2  # taken once


def test_news_from_during_the_pass_counts_and_stopping_ends_the_wait():
    wakeup = Wakeup()
    wakeup.spec_changed(3)  # arrived while the pass that read 2 was running
    assert asyncio.run(_waited(wakeup, seen=2, timeout=5)) < 1
    stopped = Flag()
    assert asyncio.run(_waited(Wakeup(), seen=1, timeout=5, act=stopped.event.set, stopped=stopped)) < 1
