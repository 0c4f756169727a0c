"""Throughput benchmarks. They print figures; they never assert on speed."""
