"""`'connector' = 'nexmark'`: the Nexmark benchmark's events as one table, with the official schema of
Nexmark's Flink connector (nexmark-flink's ddl_gen.sql): `event_type INT` (0 person, 1 auction, 2 bid)
and one ROW column per kind, NULL for the other kinds:

    CREATE TABLE datagen (
        event_type INT,
        person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR,
                   state VARCHAR, dateTime TIMESTAMP(3), extra VARCHAR>,
        auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT,
                    dateTime TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR>,
        bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
                dateTime TIMESTAMP(3), extra VARCHAR>,
        dateTime AS CASE WHEN event_type = 0 THEN person.dateTime WHEN event_type = 1 THEN auction.dateTime
                         ELSE bid.dateTime END,
        WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND
    ) WITH ('connector' = 'nexmark', 'events.num' = '1000000')

The events come from Strom's Nexmark generator (strom.connectors.nexmark, the one the DataStream
benchmark uses). Options are the official connector's: `events.num` (0: unbounded), `first-event.rate`
(event-time spacing, events/s), `rate.limited` (pace emission at that rate in wall-clock time),
`person|auction|bid.proportion`, `person|auction|bid.avg-size`, `bid.hot-ratio.auctions|bidders`,
`auction.hot-ratio.sellers`; `next-event.rate`, `rate.shape` (SQUARE), `rate.period`, `keep-alive`,
`stop-at` and `max-emit-speed` are accepted as the official connector's defaults describe them.
Columns are filled by name, so a table may declare a subset of the fields (or bid without channel/url).
"""

from __future__ import annotations

from typing import Any

from strom.common.config_options import parse_memory_size
from strom.common.watermark_strategy import WatermarkStrategy
from strom.table.connectors.registry import ConnectorFactory, TableContext, register
from strom.table.errors import NotSupportedYet
from strom.table.planner.event_time import from_millis
from strom.table.planner.rows import make_row

UNBOUNDED_EVENTS = 1 << 62  # events.num = 0: as good as endless

# official field name -> (model attribute, is a time)
_FIELDS = {
    "person": {"id": "id", "name": "name", "emailAddress": "email_address", "creditCard": "credit_card",
               "city": "city", "state": "state", "dateTime": "date_time", "extra": "extra"},
    "auction": {"id": "id", "itemName": "item_name", "description": "description", "initialBid": "initial_bid",
                "reserve": "reserve", "dateTime": "date_time", "expires": "expires", "seller": "seller",
                "category": "category", "extra": "extra"},
    "bid": {"auction": "auction", "bidder": "bidder", "price": "price", "channel": "channel", "url": "url",
            "dateTime": "date_time", "extra": "extra"},
}
_TIMES = {"date_time", "expires"}
_OPTIONS = {"events.num", "first-event.rate", "next-event.rate", "rate.limited", "rate.shape", "rate.period",
            "person.proportion", "auction.proportion", "bid.proportion", "person.avg-size", "auction.avg-size",
            "bid.avg-size", "bid.hot-ratio.auctions", "bid.hot-ratio.bidders", "auction.hot-ratio.sellers",
            "keep-alive", "stop-at", "max-emit-speed"}


class NexmarkFactory(ConnectorFactory):
    identifier = "nexmark"
    bounded_hint = " (set 'events.num')"

    def optional_options(self, ctx: TableContext) -> set[str]:
        return set(_OPTIONS)

    def validate(self, ctx: TableContext) -> None:
        for name, t in ctx.columns:
            if name == "event_type":
                if not t.is_integral:
                    raise ctx.error(f"nexmark column 'event_type' must be INT, got {t.base()}")
                continue
            fields = _FIELDS.get(name)
            if fields is None:
                raise ctx.error(f"nexmark has no column {name!r}; columns: event_type, person, auction, bid")
            if t.root != "ROW":
                raise ctx.error(f"nexmark column {name!r} must be a ROW<..>, got {t.base()}")
            for f in t.field_names():
                if f not in fields:
                    raise ctx.error(f"nexmark {name} has no field {f!r}; fields: {', '.join(fields)}")
        shape = ctx.options.get("rate.shape", "SQUARE").upper()
        if shape != "SQUARE":
            raise NotSupportedYet(f"nexmark 'rate.shape' = {shape!r} (table {ctx.name!r}); SQUARE")
        self.config(ctx)

    def config(self, ctx: TableContext) -> Any:
        from strom.connectors.nexmark import NexmarkConfig

        events = ctx.int_option("events.num", 0) or 0
        rate = ctx.int_option("first-event.rate", 10000) or 10000
        try:
            return NexmarkConfig(
                events=events if events > 0 else UNBOUNDED_EVENTS,
                rate=float(rate) if ctx.bool_option("rate.limited", False) else 0,
                event_rate=float(rate),
                person_proportion=ctx.int_option("person.proportion", 1) or 1,
                auction_proportion=ctx.int_option("auction.proportion", 3) or 3,
                bid_proportion=ctx.int_option("bid.proportion", 46) or 46,
                avg_person_byte_size=parse_memory_size(ctx.options.get("person.avg-size", "200b")),
                avg_auction_byte_size=parse_memory_size(ctx.options.get("auction.avg-size", "500b")),
                avg_bid_byte_size=parse_memory_size(ctx.options.get("bid.avg-size", "100b")),
                hot_auction_ratio=ctx.int_option("bid.hot-ratio.auctions", 2) or 2,
                hot_bidders_ratio=ctx.int_option("bid.hot-ratio.bidders", 4) or 4,
                hot_sellers_ratio=ctx.int_option("auction.hot-ratio.sellers", 4) or 4,
            )
        except ValueError as e:
            raise ctx.error(str(e)) from None

    def is_bounded(self, ctx: TableContext) -> bool:
        return (ctx.int_option("events.num", 0) or 0) > 0

    def build_source(self, ctx: TableContext, env: Any, uid: str, *, batch: bool) -> Any:
        from strom.connectors.nexmark import NexmarkSource

        events = env.from_source(NexmarkSource(self.config(ctx)), WatermarkStrategy.no_watermarks(),
                                 f"TableSourceScan[{ctx.display_name}]").uid(uid)
        return events.map(EventToRow(ctx.columns)).name("NexmarkEventToRow").uid(uid + "-rows")


class EventToRow:
    """A Person/Auction/Bid as the table's row: its kind's ROW column filled, the others NULL."""

    def __init__(self, columns: list[tuple[str, Any]]) -> None:
        from strom.connectors.nexmark import Auction, Bid, Person

        self.names = tuple(n for n, _ in columns)
        self.kinds = {Person: (0, "person"), Auction: (1, "auction"), Bid: (2, "bid")}
        # per kind: (column position, the ROW's field names, getters)
        self.layout: dict[str, tuple[int, tuple[str, ...], list[tuple[str, bool]]]] = {}
        for i, (name, t) in enumerate(columns):
            if name in _FIELDS:
                attrs = [(_FIELDS[name][f], _FIELDS[name][f] in _TIMES) for f in t.field_names()]
                self.layout[name] = (i, tuple(t.field_names()), attrs)
        self.event_type = self.names.index("event_type") if "event_type" in self.names else None

    def __call__(self, event: Any) -> Any:  # hot path: called per record
        code, kind = self.kinds[type(event)]
        values: list[Any] = [None] * len(self.names)
        if self.event_type is not None:
            values[self.event_type] = code
        layout = self.layout.get(kind)
        if layout is not None:
            i, names, attrs = layout
            values[i] = make_row([from_millis(getattr(event, a)) if is_time else getattr(event, a)
                                  for a, is_time in attrs], names)
        return make_row(values, self.names)


register(NexmarkFactory())
