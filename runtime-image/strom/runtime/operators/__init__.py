"""Runtime: operators."""
