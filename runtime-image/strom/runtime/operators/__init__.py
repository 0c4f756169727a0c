"""Runtime: operators. The built-in operators a task runs, built by kind from the graphs.

    registry.py           operator kinds -> runtime classes (`create_operator`); the user API names a kind only
    base.py               StreamOperator, Output, OperatorContext: what the task gives every operator
    contexts.py           process-function contexts: timestamp, key, timers, side outputs
    declared_state.py     keyed state of a declared numeric type holding what PyFlink's would

Operators:

    sources.py            the source operator: pulls batches from a SourceReader, applies the watermark strategy
    watermarks.py         drives a WatermarkStrategy in a source or timestamp-assigner operator
    split_watermarks.py   per-split watermarks in a source (e.g. per Kafka partition)
    basic.py              map, flat_map, filter, process, reduce, aggregations, timestamp assignment
    co_operators.py       ConnectedStreams: co-map, co-flat-map, (keyed) co-process
    broadcast.py          the broadcast state pattern ((Keyed)BroadcastProcessFunction)
    interval_join.py      interval join of two keyed streams
    async_wait.py         async I/O (AsyncWaitOperator), with async_queues.py: its ordered/unordered queues
    sinks.py              print, user SinkFunctions, collect
    sink_writer.py        the Sink V2 operator behind `ds.sink_to(sink)`

Windows:

    window_operator.py    WindowOperator (and the evicting one): assign, trigger, fire, purge
    window_contexts.py    the contexts handed to triggers, assigners, evictors and window functions
    window_functions.py   a pane's contents -> output records
    merging_window_set.py session windows of a key and where their merged state lives
    window_fast_path.py   AlignedWindowAggregator: the fast path for aligned tumbling/sliding windows

Table API and SQL operators run as keyed process functions on these (strom.table.planner.translate).
"""
