"""Building blocks of windowing: windows, assigners, triggers and evictors.

`strom.datastream.window` re-exports all of them under PyFlink's names; this package
only splits them into one module per concept.
"""
