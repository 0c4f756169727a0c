"""Runtime: network."""
