"""Building result rows without Row's keyword path (a dict per row): the planner knows the field names."""

from __future__ import annotations

from strom.common.row import make_row

__all__ = ["make_row"]  # strom.common.row's builder: Row(**dict(zip(names, values))) with a kind, no dict
