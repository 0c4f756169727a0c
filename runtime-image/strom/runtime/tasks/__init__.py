"""Runtime: tasks."""
