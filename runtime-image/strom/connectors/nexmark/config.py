"""`NexmarkConfig`: the generator's parameters and the arithmetic that maps an event number to its kind,
ids and time (Nexmark's GeneratorConfig, PersonGenerator and AuctionGenerator id functions).

Every function here is pure, so any subtask can compute any event on its own: that is what makes
parallel splits and restores exact. The vectorised forms take numpy arrays of event numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

try:
    import numpy as np
except ImportError as missing:  # numpy is the `nexmark` extra, not a core dependency
    raise ImportError("strom.connectors.nexmark needs numpy: pip install 'strom[nexmark]'") from missing

FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5
PERSON_ID_LEAD = 10
AUCTION_ID_LEAD = 10
# Hot sellers/bidders/auctions are the first (bidders: second) of each batch of this many ids.
HOT_SELLER_RATIO = 100
HOT_BIDDER_RATIO = 100
HOT_AUCTION_RATIO = 100
# 2024-01-01T00:00:00Z: a fixed base so that every run sees the same event times.
DEFAULT_BASE_TIME = 1_704_067_200_000
DEFAULT_EVENT_RATE = 10_000  # Nexmark's firstEventRate


@dataclass(frozen=True, slots=True)
class NexmarkConfig:
    """What to generate. `events`: how many (bounded); `rate`: events/s emitted over all subtasks, paced
    by wall-clock time (0: as fast as possible); `event_rate`: events per second of *event time*, which
    spaces the event timestamps (default: `rate` when throttled, else Nexmark's 10,000/s)."""

    events: int
    rate: float = 0
    event_rate: float | None = None
    base_time: int = DEFAULT_BASE_TIME
    out_of_order_group_size: int = 1
    person_proportion: int = 1
    auction_proportion: int = 3
    bid_proportion: int = 46
    avg_person_byte_size: int = 200
    avg_auction_byte_size: int = 500
    avg_bid_byte_size: int = 100
    hot_auction_ratio: int = 2
    hot_sellers_ratio: int = 4
    hot_bidders_ratio: int = 4
    num_in_flight_auctions: int = 100
    num_active_people: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.events, int) or self.events < 0:
            raise ValueError(f"nexmark: events must be a non-negative integer, got {self.events!r}")
        if self.rate < 0:
            raise ValueError(f"nexmark: rate must be >= 0 events/s (0 = unthrottled), got {self.rate!r}")
        if self.event_rate is not None and self.event_rate <= 0:
            raise ValueError(f"nexmark: event_rate must be > 0 events/s, got {self.event_rate!r}")
        if self.out_of_order_group_size < 1:
            raise ValueError(f"nexmark: out_of_order_group_size must be >= 1, got {self.out_of_order_group_size!r}")
        for name in ("person_proportion", "auction_proportion", "bid_proportion"):
            if getattr(self, name) < 1:
                raise ValueError(f"nexmark: {name} must be >= 1, got {getattr(self, name)!r}")
        for name in ("hot_auction_ratio", "hot_sellers_ratio", "hot_bidders_ratio", "num_active_people"):
            if getattr(self, name) < 1:
                raise ValueError(f"nexmark: {name} must be >= 1, got {getattr(self, name)!r}")

    @property
    def total_proportion(self) -> int:
        return self.person_proportion + self.auction_proportion + self.bid_proportion

    @property
    def inter_event_delay_us(self) -> float:
        rate = self.event_rate or self.rate or DEFAULT_EVENT_RATE
        return 1_000_000.0 / rate

    # -- scalar forms (documentation of the formulas; used for one-off values) -------------------------
    def timestamp_for_event(self, number: int) -> int:
        return self.base_time + int(number * self.inter_event_delay_us) // 1000

    def adjusted_event_number(self, number: int) -> int:
        """The number whose event is emitted in place `number`: a fixed shuffle inside each group of
        `out_of_order_group_size` (Nexmark's nextAdjustedEventNumber). A trailing partial group is not
        shuffled, so the first `events` numbers map onto themselves."""
        n = self.out_of_order_group_size
        base = number // n * n
        if n == 1 or base + n > self.events:
            return number
        return base + number * 953 % n


# -- vectorised forms over numpy int64 arrays of (adjusted) event numbers ----------------------------------
def timestamps(config: NexmarkConfig, numbers: np.ndarray) -> np.ndarray:
    delay = config.inter_event_delay_us
    return config.base_time + (numbers.astype(np.float64) * delay).astype(np.int64) // 1000


def adjusted_numbers(config: NexmarkConfig, numbers: np.ndarray) -> np.ndarray:
    n = config.out_of_order_group_size
    if n == 1:
        return numbers
    base = numbers // n * n
    shuffled = base + numbers * 953 % n
    return np.where(base + n > config.events, numbers, shuffled)


def last_base0_person_ids(config: NexmarkConfig, numbers: np.ndarray) -> np.ndarray:
    """The last person id (from 0) created at or before each event."""
    total, persons = config.total_proportion, config.person_proportion
    epoch, offset = np.divmod(numbers, total)
    return epoch * persons + np.minimum(offset, persons - 1)


def last_base0_auction_ids(config: NexmarkConfig, numbers: np.ndarray) -> np.ndarray:
    """The last auction id (from 0) created at or before each event."""
    total, persons, auctions = config.total_proportion, config.person_proportion, config.auction_proportion
    epoch, offset = np.divmod(numbers, total)
    # before this epoch's auctions: the previous epoch's last one; after them: this epoch's last one
    before = offset < persons
    epoch = np.where(before, epoch - 1, epoch)
    offset = np.where(before, auctions - 1, np.minimum(offset - persons, auctions - 1))
    return epoch * auctions + offset


def next_base0_person_ids(config: NexmarkConfig, numbers: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """A random person among the active ones plus a few not yet created (Nexmark's nextBase0PersonId)."""
    num_people = last_base0_person_ids(config, numbers) + 1
    active = np.minimum(num_people, config.num_active_people)
    return num_people - active + draws % (active + PERSON_ID_LEAD)


def next_base0_auction_ids(config: NexmarkConfig, numbers: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """A random auction among those likely still open plus a few not yet created."""
    last = last_base0_auction_ids(config, numbers)
    first = np.maximum(last - config.num_in_flight_auctions, 0)
    return first + draws % (last - first + 1 + AUCTION_ID_LEAD)
