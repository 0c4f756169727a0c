"""The Nexmark benchmark on Strom: the queries as DataStream programs, plain-Python references, a runner.

    python -m benchmarks.nexmark --query q5 --events 2000000 --parallelism 1
    python -m benchmarks.nexmark --all --events 1000000
"""
