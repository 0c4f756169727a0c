"""Runtime: state."""
