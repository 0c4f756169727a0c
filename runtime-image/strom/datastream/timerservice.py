"""PyFlink module path `pyflink.datastream.timerservice`: `TimerService`."""

from strom.datastream.functions import TimerService

__all__ = ["TimerService"]
