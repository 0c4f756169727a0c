"""UnsupportedFeatureError: a Flink or PyFlink API that Strom does not provide.

Flink answers such calls with UnsupportedOperationException. Strom raises this type, with one line
naming the call and what to use instead; NotImplementedError is kept for abstract methods (an
unfinished subclass), where it reads as what it is.
"""

from __future__ import annotations


class UnsupportedFeatureError(RuntimeError):
    """A Flink/PyFlink API Strom does not provide; the message names what to use instead."""
