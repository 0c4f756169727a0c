"""PyFlink module path `pyflink.datastream.time_domain`."""

from strom.datastream.functions import TimeDomain

__all__ = ["TimeDomain"]
