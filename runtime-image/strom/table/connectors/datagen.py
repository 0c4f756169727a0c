"""`'connector' = 'datagen'`: generated rows, with Flink's options: `number-of-rows` (bounded),
`rows-per-second` (default 10000),
`fields.<f>.kind` = random | sequence, sequence `start`/`end` (the source ends when a sequence is
exhausted), random `min`/`max` (numbers), `length` (strings, default 100). Random values are drawn
from a generator seeded by the row's index, so a restored job regenerates the same rows.
"""

from __future__ import annotations

import datetime
import random
import string
from typing import Any

from strom.common.row import Row, make_row
from strom.common.watermark_strategy import WatermarkStrategy
from strom.table.connectors.registry import ConnectorFactory, TableContext, register
from strom.table.errors import NotSupportedYet, ValidationException
from strom.table.types import DataType

_FIELD_OPTIONS = ("kind", "start", "end", "min", "max", "length")

def _int_option(table: str, options: dict[str, str], key: str) -> int | None:
    if key not in options:
        return None
    try:
        return int(options[key])
    except ValueError:
        raise ValidationException(f"table {table!r}: option {key!r} must be an integer, got {options[key]!r}") from None


class DatagenSpec:
    """The generator of one datagen table: index -> row."""

    def __init__(self, table: str, columns: list[tuple[str, DataType]], options: dict[str, str]) -> None:
        self.names = [n for n, _ in columns]
        self.fields: list[tuple[str, Any, Any, DataType]] = []  # (kind, a, b, type)
        bounds = []
        for name, t in columns:
            kind = options.get(f"fields.{name}.kind", "random")
            if kind == "sequence":
                if not t.is_integral:
                    raise NotSupportedYet(f"datagen sequence for {t.base()} column {name!r} (table {table!r})")
                start = _int_option(table, options, f"fields.{name}.start")
                end = _int_option(table, options, f"fields.{name}.end")
                if start is None or end is None:
                    raise ValidationException(
                        f"table {table!r}: sequence field {name!r} needs 'fields.{name}.start' and 'fields.{name}.end'"
                    )
                if end < start:
                    raise ValidationException(f"table {table!r}: fields.{name}.end {end} is below start {start}")
                bounds.append(end - start + 1)
                self.fields.append(("sequence", start, end, t))
            elif kind == "random":
                if t.root not in ("TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "STRING", "BOOLEAN",
                                  "TIMESTAMP"):
                    raise NotSupportedYet(f"datagen random values for {t.base()} column {name!r} (table {table!r})")
                if t.root == "STRING":
                    length = _int_option(table, options, f"fields.{name}.length")
                    self.fields.append(("random", 100 if length is None else length, None, t))
                elif t.is_numeric:
                    lo = options.get(f"fields.{name}.min")
                    hi = options.get(f"fields.{name}.max")
                    conv = int if t.is_integral else float
                    default_lo, default_hi = _RANGES.get(t.root, (-(2**31), 2**31 - 1))
                    try:
                        bounds_ = (conv(lo) if lo else default_lo, conv(hi) if hi else default_hi)
                        self.fields.append(("random", bounds_[0], bounds_[1], t))
                    except ValueError:
                        raise ValidationException(
                            f"table {table!r}: fields.{name}.min/max must be numbers, got {lo!r}/{hi!r}"
                        ) from None
                else:
                    self.fields.append(("random", None, None, t))
            else:
                raise ValidationException(
                    f"table {table!r}: fields.{name}.kind must be 'random' or 'sequence', got {kind!r}"
                )
        rows = _int_option(table, options, "number-of-rows")
        if rows is not None:
            bounds.append(rows)
        self.count: int | None = min(bounds) if bounds else None
        rate = options.get("rows-per-second")
        self.rate: float | None = float(rate) if rate is not None else (None if self.count is not None else 10000.0)

    def __call__(self, index: int) -> Row:
        rnd = random.Random(index)
        values = []
        for kind, a, _b, t in self.fields:
            if kind == "sequence":
                values.append(a + index)
            elif t.is_integral:
                values.append(rnd.randint(a, _b))
            elif t.is_numeric:
                values.append(rnd.uniform(a, _b))
            elif t.root == "STRING":
                values.append("".join(rnd.choices(string.ascii_letters + string.digits, k=a)))
            elif t.root == "BOOLEAN":
                values.append(rnd.random() < 0.5)
            else:  # TIMESTAMP: Flink's default max-past is 0, i.e. the current time
                values.append(datetime.datetime.now().replace(microsecond=0))
        return make_row(values, tuple(self.names))


_RANGES = {
    "TINYINT": (-128, 127),
    "SMALLINT": (-32768, 32767),
    "INT": (-(2**31), 2**31 - 1),
    "BIGINT": (-(2**63), 2**63 - 1),
    "FLOAT": (-3.4e38, 3.4e38),
    "DOUBLE": (-1.7e308, 1.7e308),
}



class DatagenFactory(ConnectorFactory):
    identifier = "datagen"
    bounded_hint = " (set 'number-of-rows')"

    def optional_options(self, ctx: TableContext) -> set[str]:
        return {"number-of-rows", "rows-per-second"} | {
            f"fields.{name}.{o}" for name, _ in ctx.columns for o in _FIELD_OPTIONS}

    def validate(self, ctx: TableContext) -> None:
        DatagenSpec(ctx.name, ctx.columns, ctx.options)  # validates kinds and bounds

    def is_bounded(self, ctx: TableContext) -> bool:
        return DatagenSpec(ctx.name, ctx.columns, ctx.options).count is not None

    def build_source(self, ctx: TableContext, env: Any, uid: str, *, batch: bool) -> Any:
        from strom.connectors.datagen import DataGeneratorSource

        spec = DatagenSpec(ctx.name, ctx.columns, ctx.options)
        src = DataGeneratorSource(spec, spec.count, spec.rate)
        return env.from_source(src, WatermarkStrategy.no_watermarks(), f"TableSourceScan[{ctx.display_name}]").uid(uid)


register(DatagenFactory())
