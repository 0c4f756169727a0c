"""PyFlink module path `pyflink.common.types`: `Row` and `RowKind`."""

from strom.common.row import Row, RowKind

__all__ = ["Row", "RowKind"]
