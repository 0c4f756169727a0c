"""'connector' = 'nexmark' with the official Nexmark DDL (nexmark-flink's ddl_gen.sql: ROW columns, the
CASE computed dateTime with its watermark) and views (ddl_views.sql: `bid.price` field access): the SQL
results against plain Python over the generator's events (strom.connectors.nexmark, as the DataStream
benchmark reads them), and the refusals."""

from __future__ import annotations

import datetime
from collections import Counter
from decimal import Decimal
from typing import Any

import numpy as np
import pytest
from strom.connectors.nexmark import Auction, Bid, NexmarkConfig, Person
from strom.connectors.nexmark.generator import EventBatchGenerator
from strom.table import EnvironmentSettings, TableEnvironment
from strom.table.errors import NotSupportedYet, ValidationException

EVENTS = 2000

DDL = """
CREATE TABLE datagen (
    event_type int,
    person ROW<
        id  BIGINT,
        name  VARCHAR,
        emailAddress  VARCHAR,
        creditCard  VARCHAR,
        city  VARCHAR,
        state  VARCHAR,
        dateTime TIMESTAMP(3),
        extra  VARCHAR>,
    auction ROW<
        id  BIGINT,
        itemName  VARCHAR,
        description  VARCHAR,
        initialBid  BIGINT,
        reserve  BIGINT,
        dateTime  TIMESTAMP(3),
        expires  TIMESTAMP(3),
        seller  BIGINT,
        category  BIGINT,
        extra  VARCHAR>,
    bid ROW<
        auction  BIGINT,
        bidder  BIGINT,
        price  BIGINT,
        channel  VARCHAR,
        url  VARCHAR,
        dateTime  TIMESTAMP(3),
        extra  VARCHAR>,
    dateTime AS
        CASE
            WHEN event_type = 0 THEN person.dateTime
            WHEN event_type = 1 THEN auction.dateTime
            ELSE bid.dateTime
        END,
    WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
) WITH (
    'connector' = 'nexmark',
    'first-event.rate' = '1000',
    'next-event.rate' = '1000',
    'events.num' = '%d',
    'person.proportion' = '1',
    'auction.proportion' = '3',
    'bid.proportion' = '46'
)"""

VIEWS = [
    "CREATE VIEW person AS SELECT person.id, person.name, person.emailAddress, person.creditCard, person.city, "
    "person.state, dateTime, person.extra FROM datagen WHERE event_type = 0",
    "CREATE VIEW auction AS SELECT auction.id, auction.itemName, auction.description, auction.initialBid, "
    "auction.reserve, dateTime, auction.expires, auction.seller, auction.category, auction.extra FROM datagen "
    "WHERE event_type = 1",
    "CREATE VIEW bid AS SELECT bid.auction, bid.bidder, bid.price, bid.channel, bid.url, dateTime, bid.extra "
    "FROM datagen WHERE event_type = 2",
]


def _t_env(parallelism: int = 2) -> TableEnvironment:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    t_env.get_config().set("parallelism.default", str(parallelism))
    t_env.execute_sql(DDL % EVENTS)
    for view in VIEWS:
        t_env.execute_sql(view)
    return t_env


def _events() -> list[Any]:
    """The same events in plain Python: the generator over event numbers 0..EVENTS-1."""
    config = NexmarkConfig(events=EVENTS, event_rate=1000.0)
    events, _ = EventBatchGenerator(config).generate(np.arange(EVENTS, dtype=np.int64))
    return events


def _ts(ms: int) -> datetime.datetime:
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)


def _collect(t_env: TableEnvironment, sql: str) -> Counter:
    with t_env.execute_sql(sql).collect() as rows:
        return Counter(tuple(r) for r in rows)


def test_views_split_the_events_by_kind_with_their_fields() -> None:
    t_env = _t_env()
    events = _events()
    bids = _collect(t_env, "SELECT auction, bidder, price, channel, url, dateTime, extra FROM bid")
    assert bids == Counter((e.auction, e.bidder, e.price, e.channel, e.url, _ts(e.date_time), e.extra)
                           for e in events if type(e) is Bid)
    persons = _collect(t_env, "SELECT id, name, emailAddress, city, dateTime FROM person")
    assert persons == Counter((e.id, e.name, e.email_address, e.city, _ts(e.date_time))
                              for e in events if type(e) is Person)
    auctions = _collect(t_env, "SELECT id, itemName, initialBid, expires, seller, category FROM auction")
    assert auctions == Counter((e.id, e.item_name, e.initial_bid, _ts(e.expires), e.seller, e.category)
                               for e in events if type(e) is Auction)
    assert sum(bids.values()) == EVENTS * 46 // 50


def test_q1_currency_conversion_and_q2_selection() -> None:
    t_env = _t_env()
    events = _events()
    q1 = _collect(t_env, "SELECT auction, bidder, 0.908 * price as price, dateTime, extra FROM bid")
    # 0.908 is DECIMAL(3, 3) in Flink, so q1's price is the exact DECIMAL(23, 3) product, not a double
    assert q1 == Counter((e.auction, e.bidder, Decimal("0.908") * e.price, _ts(e.date_time), e.extra)
                         for e in events if type(e) is Bid)
    q2 = _collect(t_env, "SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0")
    assert q2 == Counter((e.auction, e.price) for e in events if type(e) is Bid and e.auction % 123 == 0)


def test_tumbling_window_over_the_computed_rowtime() -> None:
    """Bids per auction-less 1 s window of event time (rows per window from plain Python)."""
    t_env = _t_env()
    got = _collect(t_env, "SELECT window_start, COUNT(*) FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), "
                          "INTERVAL '1' SECOND)) GROUP BY window_start, window_end")
    expected = Counter(_ts(e.date_time - e.date_time % 1000) for e in _events() if type(e) is Bid)
    assert got == Counter({(w, n): 1 for w, n in expected.items()})


def test_bad_tables_and_fields_are_refused() -> None:
    t_env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    with pytest.raises(ValidationException, match="nexmark has no column 'foo'"):
        t_env.execute_sql("CREATE TABLE n (foo INT) WITH ('connector' = 'nexmark')")
    with pytest.raises(ValidationException, match="nexmark bid has no field 'cost'"):
        t_env.execute_sql("CREATE TABLE n (bid ROW<cost BIGINT>) WITH ('connector' = 'nexmark')")
    with pytest.raises(ValidationException, match="unsupported option 'events.number'.*events.num"):
        t_env.execute_sql("CREATE TABLE n (event_type INT) WITH ('connector' = 'nexmark', 'events.number' = '5')")
    with pytest.raises(NotSupportedYet, match="rate.shape"):
        t_env.execute_sql("CREATE TABLE n (event_type INT) WITH ('connector' = 'nexmark', 'rate.shape' = 'SINE')")
    t_env = _t_env()
    with pytest.raises(ValidationException, match="not a ROW with a field 'cost'"):
        t_env.execute_sql("SELECT bid.cost FROM datagen")
    batch = TableEnvironment.create(EnvironmentSettings.in_batch_mode())
    batch.execute_sql("CREATE TABLE n (event_type INT) WITH ('connector' = 'nexmark')")
    with pytest.raises(ValidationException, match="unbounded; batch mode needs bounded sources \\(set 'events.num'\\)"):
        batch.execute_sql("SELECT * FROM n")
