"""The slot autoscaler: pure logic from JobManager REST metrics to per-vertex parallelism decisions."""
