"""The TaskManager process and its slot worker processes."""
