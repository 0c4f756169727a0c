"""The strings Nexmark events carry, made once per process from a fixed seed.

Nexmark draws every name, e-mail, item name, description and `extra` payload character by character
from a random generator. Per event that would cost more than the rest of the event together, so the
strings are drawn here, with Nexmark's own algorithms (StringsGenerator, PersonGenerator,
BidGenerator.getBaseUrl), into pools that events pick from by a hash of their number. `extra`
payloads are slices of one long random text, with the lengths Nexmark's nextExtra gives.
"""

from __future__ import annotations

import random

import numpy as np

MIN_STRING_LENGTH = 3
POOL_SIZE = 1024
EXTRA_TEXT_LENGTH = 1 << 16
CHANNELS_NUMBER = 10_000
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
US_CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent",
             "Cheyenne")
FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter")
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris")


def next_string(rng: random.Random, max_length: int, space: str = " ") -> str:
    """Nexmark's nextString: 3..max_length-1 characters, about one in 13 a space, trimmed."""
    length = MIN_STRING_LENGTH + rng.randrange(max_length - MIN_STRING_LENGTH)
    chars = [space if rng.randrange(13) == 0 else chr(97 + rng.randrange(26)) for _ in range(length)]
    return "".join(chars).strip()


def java_int_reverse(value: int) -> int:
    """Java's Math.abs(Integer.reverse(value)): the 32 bits reversed, read as a signed int, made
    positive (except Integer.MIN_VALUE, which Java's abs leaves negative)."""
    reversed_bits = int(f"{value & 0xFFFFFFFF:032b}"[::-1], 2)
    signed = reversed_bits - (1 << 32) if reversed_bits >= 1 << 31 else reversed_bits
    return signed if signed == -(1 << 31) else abs(signed)


def base_url(rng: random.Random) -> str:
    dirs = "/".join(next_string(rng, 5, "_") for _ in range(3))
    return f"https://www.nexmark.com/{dirs}/item.htm?query=1"


class StringPools:
    """Every pool, as numpy object arrays (picked from by fancy indexing) plus their lengths."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(f"nexmark-strings-{seed}")
        self.person_names = np.array([f"{f} {last}" for f in FIRST_NAMES for last in LAST_NAMES], dtype=object)
        self.emails = _pool([f"{next_string(rng, 7)}@{next_string(rng, 5)}.com" for _ in range(POOL_SIZE)])
        self.item_names = _pool([next_string(rng, 20) for _ in range(POOL_SIZE)])
        self.descriptions = _pool([next_string(rng, 100) for _ in range(POOL_SIZE)])
        self.cities = np.array(US_CITIES, dtype=object)
        self.states = np.array(US_STATES, dtype=object)
        # channels 0..9999 then the four hot ones, each with its url (90% of cold urls carry a channel_id)
        channels = [f"channel-{k}" for k in range(CHANNELS_NUMBER)] + list(HOT_CHANNELS)
        urls = []
        for k in range(CHANNELS_NUMBER):
            url = base_url(rng)
            if rng.randrange(10) > 0:
                url = f"{url}&channel_id={java_int_reverse(k)}"
            urls.append(url)
        urls += [base_url(rng) for _ in HOT_CHANNELS]
        self.channels = np.array(channels, dtype=object)
        self.urls = np.array(urls, dtype=object)
        self.extra_text = "".join(chr(97 + rng.randrange(26)) for _ in range(EXTRA_TEXT_LENGTH))

    def lengths(self, pool: np.ndarray) -> np.ndarray:
        return np.fromiter((len(s) for s in pool), dtype=np.int64, count=len(pool))


def _pool(strings: list[str]) -> np.ndarray:
    return np.array(strings, dtype=object)


_POOLS: dict[int, StringPools] = {}


def string_pools(seed: int) -> StringPools:
    """The pools of one seed, made on first use in this process (they take a few milliseconds)."""
    pools = _POOLS.get(seed)
    if pools is None:
        pools = _POOLS[seed] = StringPools(seed)
    return pools
