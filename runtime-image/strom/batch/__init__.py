"""BATCH runtime mode: a bounded DataStream program run on Apache Spark through PySpark.

The program's StreamGraph is cut into stages at its shuffles (the JobGraph's chains); each stage
runs our own engine operators per Spark partition (`stage_runner`), so functions, keyed state,
timers and window assigners behave exactly as in STREAMING mode. Edges between stages become Spark
shuffles that route records as the engine's partitioners do (`routing`) and carry them in a few
large chunks per partition pair, put in the consumer's order (`shuffle_write`, `shuffle_read`).
Flink's batch semantics:
keyed input is sorted by timestamp, the watermark jumps from -infinity to +infinity at the end of
the input (firing every event-time timer and window in timestamp order), and rolling reductions
emit only each key's final value.

pyspark is imported only inside this package (`pip install 'strom[spark]'`).
"""
