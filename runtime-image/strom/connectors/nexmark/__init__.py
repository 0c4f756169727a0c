"""The Nexmark benchmark's event generator as a bounded, splittable, checkpointable source.

    from strom.connectors.nexmark import Bid, NexmarkSource
    events = env.from_source(NexmarkSource(events=1_000_000), NexmarkSource.watermarks(), "nexmark")
    bids = events.filter(lambda e: type(e) is Bid)
"""

from strom.connectors.nexmark.config import NexmarkConfig
from strom.connectors.nexmark.model import Auction, Bid, Event, Person
from strom.connectors.nexmark.source import NexmarkReader, NexmarkSource

__all__ = ["Auction", "Bid", "Event", "NexmarkConfig", "NexmarkReader", "NexmarkSource", "Person"]
