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
from strom.common.row import Row, RowKind
from strom.common.watermark_strategy import WatermarkStrategy
from strom.datastream.functions import MapFunction
from strom.table.connectors.registry import ConnectorFactory, TableContext, register
from strom.table.errors import NotSupportedYet
from strom.table.planner.event_time import _MS, EPOCH
from strom.table.planner.scan_fusion import EventBranch

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
        events = self.build_event_stream(ctx, env, uid)
        return events.map(EventToRow(ctx.columns)).name("NexmarkEventToRow").uid(uid + "-rows")

    # -- push-down (strom.table.planner.scan_fusion): the table is a tagged union of the three event kinds
    def build_event_stream(self, ctx: TableContext, env: Any, uid: str) -> Any:
        """The generator's events themselves (Person, Auction, Bid NamedTuples), one per record."""
        from strom.connectors.nexmark import NexmarkSource

        return env.from_source(NexmarkSource(self.config(ctx)), WatermarkStrategy.no_watermarks(),
                               f"TableSourceScan[{ctx.display_name}]").uid(uid)

    def event_branches(self, ctx: TableContext) -> list[EventBranch]:
        """Per event kind (bids first, as most events are bids): `event_type`'s value, the ROW column it fills
        and each declared field as Python over the event `e` (TIMESTAMP(3) fields from their epoch ms)."""
        from strom.connectors.nexmark import Auction, Bid, Person

        names = [n for n, _ in ctx.columns]
        types = dict(ctx.columns)
        out = []
        for kind, code, cls in (("bid", 2, Bid), ("person", 0, Person), ("auction", 1, Auction)):
            positions = {f: k for k, f in enumerate(cls._fields)}
            fields: dict[str, str] = {}
            millis: dict[str, str] = {}
            for f in types[kind].field_names() if kind in types else []:
                attr = _FIELDS[kind][f]
                ref = f"e[{positions[attr]}]"
                fields[f] = f"(_E + {ref} * _MS)" if attr in _TIMES else ref
                if attr in _TIMES:
                    millis[f] = ref
            out.append(EventBranch(cls, {"event_type": code} if "event_type" in names else {},
                                   kind if kind in names else None, fields, millis))
        return out

    def event_consts(self) -> dict[str, Any]:
        return {"_E": EPOCH, "_MS": _MS}


class EventToRow(MapFunction):
    """A Person/Auction/Bid as the table's row: its kind's ROW column filled, the others NULL.

    `map` is generated from the table's columns (one function testing the event's type, bids first as
    they are most events, each branch building its rows inline): per record this runs once for every
    event of the source, so a generic loop over the fields with a make_row call per ROW shows in
    profiles. Pickles its columns and generates again where it runs."""

    def __init__(self, columns: list[tuple[str, Any]]) -> None:
        self.columns = columns
        self._bind()

    def __getstate__(self) -> dict[str, Any]:
        return {"columns": self.columns}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.columns = state["columns"]
        self._bind()

    def _bind(self) -> None:
        source, consts = event_to_row_source(self.columns)
        namespace = dict(consts)
        exec(compile(source, "<strom-nexmark-row>", "exec"), namespace)  # noqa: S102 - generated from the DDL
        self.map = namespace["event_to_row"]  # type: ignore[method-assign]

    def map(self, value: Any) -> Any:  # replaced per instance by the generated function
        raise AssertionError("unbound")


def event_to_row_source(columns: list[tuple[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The source of `event_to_row(event)` for these table columns, and the constants it reads."""
    from strom.connectors.nexmark import Auction, Bid, Person

    names = tuple(n for n, _ in columns)
    consts: dict[str, Any] = {"_new": object.__new__, "_Row": Row, "_I": RowKind.INSERT, "_names": names,
                              "_E": EPOCH, "_MS": _MS, "Person": Person, "Auction": Auction, "Bid": Bid}
    kinds = {"bid": (2, Bid), "person": (0, Person), "auction": (1, Auction)}
    lines = ["def event_to_row(e):", "    t = type(e)"]
    for n, (kind, (code, cls)) in enumerate(kinds.items()):
        lines.append(f"    {'if' if n == 0 else 'elif'} t is {cls.__name__}:")
        values = ["None"] * len(columns)
        if "event_type" in names:
            values[names.index("event_type")] = str(code)
        if kind in names:
            i = names.index(kind)
            positions = {f: k for k, f in enumerate(cls._fields)}
            fields = []
            for f in columns[i][1].field_names():
                attr = _FIELDS[kind][f]
                fields.append(f"_E + e[{positions[attr]}] * _MS" if attr in _TIMES else f"e[{positions[attr]}]")
            consts[f"_n_{kind}"] = tuple(columns[i][1].field_names())
            lines.append(f"        n = _new(_Row); n._values = [{', '.join(fields)}]; n._fields = _n_{kind}; "
                         "n._row_kind = _I")
            values[i] = "n"
        lines.append(f"        r = _new(_Row); r._values = [{', '.join(values)}]; r._fields = _names; r._row_kind = _I")
        lines.append("        return r")
    lines.append("    raise KeyError(t)")
    return "\n".join(lines) + "\n", consts


register(NexmarkFactory())
