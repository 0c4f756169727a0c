"""Writes the example set's input: user behaviour events and the category dimension table (csv).

The classic Flink SQL demo reads Taobao user behaviour events (user_id, item_id, category_id, behavior,
ts). This writes a small deterministic stand-in for one day, 2026-11-26, in time order: `python
examples/sql/generate_data.py [EVENTS] [DIR]` (defaults: 3000 events, examples/sql/data). The same seed
gives the same files, so the committed csv is reproducible.
"""

from __future__ import annotations

import os
import random
import sys
from datetime import datetime, timedelta

BEHAVIORS = ("pv", "pv", "pv", "pv", "cart", "fav", "buy")  # page views dominate, as in the real data set
CATEGORIES = ("Books", "Clothing", "Electronics", "Food", "Garden", "Health", "Music", "Sports", "Toys", "Travel")
DAY = datetime(2026, 11, 26)


def events(count: int, seed: int = 20) -> list[tuple[int, int, int, str, str]]:
    """`count` events spread over the day in time order: (user_id, item_id, category_id, behavior, ts)."""
    rng = random.Random(seed)
    seconds = sorted(rng.randrange(24 * 3600) for _ in range(count))
    out = []
    for s in seconds:
        category = rng.randrange(1, len(CATEGORIES) + 1)
        ts = (DAY + timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S")
        out.append((rng.randrange(1, 400), category * 1000 + rng.randrange(50), category, rng.choice(BEHAVIORS), ts))
    return out


def write(directory: str, count: int) -> None:
    os.makedirs(os.path.join(directory, "user_behavior"), exist_ok=True)
    os.makedirs(os.path.join(directory, "category"), exist_ok=True)
    with open(os.path.join(directory, "user_behavior", "events.csv"), "w", encoding="utf-8") as f:
        for e in events(count):
            f.write(",".join(str(v) for v in e) + "\n")
    with open(os.path.join(directory, "category", "category.csv"), "w", encoding="utf-8") as f:
        for i, name in enumerate(CATEGORIES, start=1):
            f.write(f"{i},{name}\n")


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    write(sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "data"), n)
