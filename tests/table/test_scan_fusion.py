"""Projection, filter and watermark push-down into the nexmark source, fused with the Calcs above it
(strom.table.planner.scan_fusion): results against plain Python over the generator's own events and against the
unfused plan (code generation off: the interpreter, every Calc and the watermark assigner on rows); watermarks
advance on every event kind, as the unfused WatermarkAssigner has them; EXPLAIN shows what was pushed; a source
read twice is not fused."""

from __future__ import annotations

import datetime
import random
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from strom.connectors.nexmark import Auction, Bid, NexmarkConfig, Person
from strom.connectors.nexmark.generator import EventBatchGenerator
from strom.datastream import StreamExecutionEnvironment
from strom.datastream.functions import ProcessFunction
from strom.table import EnvironmentSettings, StreamTableEnvironment, TableEnvironment
from strom.table.planner import calc_codegen, scan_fusion

from tests.table.test_nexmark_connector import DDL, VIEWS

EVENTS = 1500


def _events() -> list[Any]:
    config = NexmarkConfig(events=EVENTS, event_rate=1000.0)
    events, _ = EventBatchGenerator(config).generate(np.arange(EVENTS, dtype=np.int64))
    return events


def _ts(ms: int) -> datetime.datetime:
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)


def _t_env(parallelism: int = 1) -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", str(parallelism))
    t_env.execute_sql(DDL % EVENTS)
    for view in VIEWS:
        t_env.execute_sql(view)
    return t_env


def _collect(sql: str, parallelism: int = 1) -> Counter:
    with _t_env(parallelism).execute_sql(sql).collect() as rows:
        return Counter(tuple(r) for r in rows)


def _unfused(sql: str, monkeypatch: pytest.MonkeyPatch) -> Counter:
    with monkeypatch.context() as m:
        m.setattr(calc_codegen, "ENABLED", False)  # interpreted Calcs, no fusion: the plan as EXPLAIN prints it
        return _collect(sql)


def _fused_plan(sql: str) -> scan_fusion.FusedScanNode | None:
    node = _t_env().sql_query(sql)._node
    return scan_fusion.fuse(node, scan_fusion.count_sources([node]))


def _row(values: list[Any]) -> dict[str, Any]:
    return dict(values)


# query -> its rows in plain Python over one event (an empty list: the event gives no row)
QUERIES: dict[str, Callable[[Any], list[tuple[Any, ...]]]] = {
    "SELECT auction, bidder, price, dateTime, extra FROM bid":
        lambda e: [(e.auction, e.bidder, e.price, _ts(e.date_time), e.extra)] if type(e) is Bid else [],
    "SELECT auction, bidder, price * 2 AS p, dateTime, extra FROM bid":
        lambda e: [(e.auction, e.bidder, e.price * 2, _ts(e.date_time), e.extra)] if type(e) is Bid else [],
    "SELECT auction, price FROM bid WHERE MOD(auction, 7) = 0":
        lambda e: [(e.auction, e.price)] if type(e) is Bid and e.auction % 7 == 0 else [],
    "SELECT id, name, dateTime FROM person WHERE state = 'OR' OR id % 3 = 1":
        lambda e: [(e.id, e.name, _ts(e.date_time))] if type(e) is Person and (e.state == "OR" or e.id % 3 == 1)
        else [],
    "SELECT seller, expires, reserve - initialBid FROM auction WHERE category = 10":
        lambda e: [(e.seller, _ts(e.expires), e.reserve - e.initial_bid)]
        if type(e) is Auction and e.category == 10 else [],
    # no view: every kind gives a row, the other kinds' ROW columns NULL
    "SELECT event_type, person.id IS NULL, auction.seller, bid.price, dateTime FROM datagen": lambda e: [(
        {Person: 0, Auction: 1, Bid: 2}[type(e)], type(e) is not Person,
        e.seller if type(e) is Auction else None, e.price if type(e) is Bid else None, _ts(e.date_time))],
    # the whole ROW read: built only where it is read
    "SELECT bid, event_type FROM datagen WHERE event_type = 2 AND bid.price > 1000": lambda e: [(
        (e.auction, e.bidder, e.price, e.channel, e.url, _ts(e.date_time), e.extra), 2)]
        if type(e) is Bid and e.price > 1000 else [],
}


@pytest.mark.parametrize("sql", list(QUERIES))
def test_fused_query_equals_plain_python_over_the_generators_events(sql: str) -> None:
    assert _fused_plan(sql) is not None, "the query is fused"
    got = _collect(sql)
    expected = Counter(r for e in _events() for r in QUERIES[sql](e))
    assert sum(expected.values()) > 0
    assert Counter({tuple(tuple(v) if hasattr(v, "_values") else v for v in k): n
                    for k, n in got.items()}) == expected


def test_fused_query_at_parallelism_two_equals_plain_python() -> None:
    sql = "SELECT auction, price FROM bid WHERE price > 5000"
    assert _collect(sql, parallelism=2) == Counter((e.auction, e.price) for e in _events()
                                                   if type(e) is Bid and e.price > 5000)


# -- random filters, NULLs included -----------------------------------------------------------------------------
_COLUMNS = {  # SQL column -> its value in plain Python for an event (None: that kind's ROW is NULL)
    "event_type": lambda e: {Person: 0, Auction: 1, Bid: 2}[type(e)],
    "bid.price": lambda e: e.price if type(e) is Bid else None,
    "bid.auction": lambda e: e.auction if type(e) is Bid else None,
    "auction.reserve": lambda e: e.reserve if type(e) is Auction else None,
    "auction.seller": lambda e: e.seller if type(e) is Auction else None,
    "person.id": lambda e: e.id if type(e) is Person else None,
}
_OPS = {"=": lambda x, y: x == y, "<>": lambda x, y: x != y, "<": lambda x, y: x < y, ">=": lambda x, y: x >= y}


def _and(x: bool | None, y: bool | None) -> bool | None:
    return False if x is False or y is False else None if x is None or y is None else True


def _or(x: bool | None, y: bool | None) -> bool | None:
    return True if x is True or y is True else None if x is None or y is None else False


def _random_condition(rng: random.Random, events: list[Any], depth: int) -> tuple[str, Callable[[Any], Any]]:
    """A random SQL condition and its three-valued meaning in plain Python."""
    if depth == 0 or rng.random() < 0.3:
        column = rng.choice(list(_COLUMNS))
        get = _COLUMNS[column]
        values = [v for v in map(get, events) if v is not None]
        op = rng.choice(list(_OPS))
        if column != "event_type" and rng.random() < 0.4:
            k = rng.randint(2, 7)
            r = rng.randrange(k)  # non-negative operands: Java's remainder is Python's
            return (f"MOD({column}, {k}) {op} {r}",
                    lambda e: None if get(e) is None else _OPS[op](get(e) % k, r))
        c = rng.choice(values)
        return f"{column} {op} {c}", lambda e: None if get(e) is None else _OPS[op](get(e), c)
    kind = rng.choice(["and", "or", "not"])
    a_sql, a = _random_condition(rng, events, depth - 1)
    if kind == "not":
        return f"NOT ({a_sql})", lambda e: None if a(e) is None else not a(e)
    b_sql, b = _random_condition(rng, events, depth - 1)
    combine = _and if kind == "and" else _or
    return f"({a_sql}) {kind.upper()} ({b_sql})", lambda e: combine(a(e), b(e))


@pytest.mark.parametrize("seed", range(6))
def test_random_filters_over_all_kinds_equal_the_unfused_plan_and_plain_python(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    events = _events()
    where, holds = _random_condition(rng, events, 3)
    sql = ("SELECT event_type, bid.price, auction.seller, person.id, CASE WHEN event_type = 1 THEN auction.reserve "
           f"ELSE bid.auction END FROM datagen WHERE {where}")
    assert _fused_plan(sql) is not None
    expected = Counter((_COLUMNS["event_type"](e), _COLUMNS["bid.price"](e), _COLUMNS["auction.seller"](e),
                        _COLUMNS["person.id"](e),
                        _COLUMNS["auction.reserve"](e) if type(e) is Auction else _COLUMNS["bid.auction"](e))
                       for e in events if holds(e) is True)
    assert _collect(sql) == expected, where
    assert _unfused(sql, monkeypatch) == expected, where


# -- watermarks -----------------------------------------------------------------------------------------------------
class _WatermarkAtRow(ProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> Any:
        yield value[0], ctx.timer_service().current_watermark()


def _watermarks_seen(sql: str) -> list[tuple[Any, int]]:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    env.get_config().set_auto_watermark_interval(0)  # a watermark on every advance, none from a timer
    t_env = StreamTableEnvironment.create(env)
    t_env.execute_sql(DDL % EVENTS)
    for view in VIEWS:
        t_env.execute_sql(view)
    table = t_env.sql_query(sql)
    assert scan_fusion.fuse(table._node, scan_fusion.count_sources([table._node])) is not None
    with t_env.to_data_stream(table).process(_WatermarkAtRow()).execute_and_collect() as rows:
        return list(rows)


def test_the_watermark_advances_on_events_of_every_kind_not_only_the_rows_kept() -> None:
    """Each bid sees the watermark of the events before it, persons and auctions included: the highest event
    time so far less 4 s (a watermark follows the record that raised it)."""
    got = _watermarks_seen("SELECT auction FROM bid")
    expected = []
    highest = None
    for e in _events():
        if type(e) is Bid:
            expected.append((e.auction, -(2**63) if highest is None else highest - 4000))
        highest = e.date_time if highest is None else max(highest, e.date_time)
    assert got == expected


# -- EXPLAIN and when not to fuse -----------------------------------------------------------------------------------
def test_explain_shows_the_projection_filter_and_watermark_pushed_into_the_scan() -> None:
    t_env = _t_env()
    text = t_env.sql_query("SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0").explain()
    assert "Calc(select=[bid.auction AS auction, bid.price AS price], where=[((bid.auction % 123) = 0)])" in text
    assert ("+- TableSourceScan(table=[default_catalog.default_database.datagen, project=[event_type, "
            "person.dateTime, auction.dateTime, bid.auction, bid.price, bid.dateTime], filter=[(event_type = 2)], "
            "watermark=[dateTime := CASE((event_type = 0), person.dateTime, (event_type = 1), auction.dateTime, "
            "bid.dateTime), (dateTime - INTERVAL '4' SECOND)]]") in text


def test_a_source_read_by_two_consumers_is_not_fused() -> None:
    t_env = _t_env()
    node = t_env.sql_query("SELECT B.auction, A.seller FROM bid B JOIN auction A ON B.auction = A.id")._node
    counts = scan_fusion.count_sources([node])
    assert list(counts.values()) == [2]
    calcs, stack = [], [node]
    while stack:
        n = stack.pop()
        calcs += [n] if scan_fusion.match(n) is not None else []  # each view's Calc over the watermarked source
        stack += n.inputs
    assert len(calcs) == 2
    assert all(scan_fusion.fuse(c, counts) is None for c in calcs)
    assert all(scan_fusion.fuse(c, {k: 1 for k in counts}) is not None for c in calcs)  # read once: fused


def test_a_watermark_other_than_rowtime_minus_an_interval_is_not_fused() -> None:
    t_env = _t_env()
    t_env.execute_sql((DDL % EVENTS).replace("CREATE TABLE datagen", "CREATE TABLE other").replace(
        "dateTime - INTERVAL '4' SECOND", "CASE WHEN event_type = 2 THEN dateTime ELSE dateTime END"))
    node = t_env.sql_query("SELECT bid.price FROM other WHERE event_type = 2")._node
    assert scan_fusion.fuse(node, scan_fusion.count_sources([node])) is None


def test_integer_remainder_and_division_truncate_toward_zero_for_negative_operands() -> None:
    """Java's `%` and `/` (the fused code's fast path is Python's floor division, exact for positive operands)."""
    import math

    sql = ("SELECT MOD(auction - 1005, 3), (auction - 1005) / 2, MOD(auction, 1005 - auction) FROM bid "
           "WHERE auction <> 1005")
    assert _fused_plan(sql) is not None
    got = _collect(sql)
    expected = Counter((int(math.fmod(e.auction - 1005, 3)), int((e.auction - 1005) / 2),
                        int(math.fmod(e.auction, 1005 - e.auction))) for e in _events()
                       if type(e) is Bid and e.auction != 1005)
    assert any(k[0] < 0 for k in expected) and any(k[0] > 0 for k in expected)
    assert got == expected


def test_integer_division_by_zero_fails_the_job_naming_the_expression() -> None:
    with pytest.raises(Exception, match="division by zero"):
        _collect("SELECT auction / (price - price) FROM bid")


def test_a_fused_scan_under_an_aggregate_gives_python_counts_and_explain_shows_it_beneath() -> None:
    sql = "SELECT auction, COUNT(*) AS n FROM bid WHERE price > 1000 GROUP BY auction"
    t_env = _t_env()
    text = t_env.execute_sql(f"EXPLAIN {sql}").collect()
    plan = "".join(str(r[0]) for r in text)
    assert plan.index("GroupAggregate") < plan.index("Calc(select=[bid.auction AS auction")
    assert "filter=[(event_type = 2)]" in plan
    final: dict[int, int] = {}
    with t_env.execute_sql(sql).collect() as rows:
        for r in rows:
            if r.get_row_kind().name in ("INSERT", "UPDATE_AFTER"):
                final[r[0]] = r[1]
    assert final == dict(Counter(e.auction for e in _events() if type(e) is Bid and e.price > 1000))


@pytest.mark.parametrize("fused", [True, False])
def test_a_null_rowtime_of_a_filtered_out_kind_still_fails_the_job(
        fused: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The watermark assigner reads every event, persons included, whose dateTime is NULL here: Flink refuses
    a NULL rowtime, fused or not, even though the view's filter would drop those rows."""
    monkeypatch.setattr(calc_codegen, "ENABLED", fused)
    t_env = _t_env()
    t_env.execute_sql((DDL % EVENTS).replace("CREATE TABLE datagen", "CREATE TABLE bids_only").replace(
        "WHEN event_type = 0 THEN person.dateTime",
        "WHEN event_type = 0 THEN CASE WHEN event_type = 7 THEN person.dateTime END"))  # NULL for persons
    sql = "SELECT bid.price FROM bids_only WHERE event_type = 2"
    node = t_env.sql_query(sql)._node
    assert scan_fusion.fuse(node, scan_fusion.count_sources([node])) is not None  # translated fused when enabled
    with pytest.raises(Exception, match="RowTime field 'dateTime' should not be null"):
        with t_env.execute_sql(sql).collect() as rows:
            list(rows)
