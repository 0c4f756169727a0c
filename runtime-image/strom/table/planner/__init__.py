"""The planner: Table API and SQL -> logical plans -> DataStream operators.

Plans:

    plan.py           logical plan nodes shared by the Table API and SQL (columns, changelog or insert-only)
    builder.py        build plan nodes from expressions: the one place the Table API and SQL meet
    column_ops.py     add/replace/rename/drop columns as one projection each (pure)
    inline_values.py  SQL `VALUES (..), (..)` as a Values source
    join.py           regular joins: name resolution, equality keys and residual condition
    interval_join.py  interval joins (rowtime bounds between inputs): inner on the DataStream interval join,
                      LEFT/RIGHT/FULL on their own function (NULL-padded rows when the watermark passes)
    window_join.py    window joins (ON both window_start and window_end): once per window, insert-only
    temporal_join.py  FOR SYSTEM_TIME AS OF: event-time joins against versioned tables; PROCTIME to lookup_join
    correlate.py      table functions in FROM (LATERAL TABLE, join_lateral)
    windowing.py      time attributes, window TVFs and legacy group windows onto window aggregation
    over_agg.py       OVER aggregations: planning and their keyed function
    top_n.py          Top-N (ROW_NUMBER/RANK/DENSE_RANK), deduplication and ORDER BY/LIMIT onto RankNode
    window_rank.py    window Top-N and window deduplication: ranked once per window, insert-only
    table_aggregate.py table aggregate functions (udtaf, flat_aggregate): plan node and GroupTableAggFunction
    lookup_join.py    processing-time lookup joins (FOR SYSTEM_TIME AS OF proctime): plan node, sync/async functions
    lookup_cache.py   lookup.cache NONE/PARTIAL/FULL with Flink's options and cache metrics (pure, injectable clock)

Expressions and values:

    scalar.py         a scalar Expression compiled to (function over a row tuple, result DataType)
    values.py         how SQL values print (Flink's CAST(... AS STRING) rules)
    rows.py           result rows built without Row's keyword path

Translation and the functions it runs:

    translate.py      plans onto DataStream operators; uids derive from the plan digest
    group_agg.py      group aggregation (GroupAggFunction): accumulators in ValueState, a changelog out
    streaming_join.py the regular join's runtime (StreamingJoinOperator): both sides in MapState
    rank.py           Top-N (insert-only input) and deduplication functions
    retract_rank.py   retract Top-N (updating input) and RANK/DENSE_RANK: the partition kept sorted
    event_time.py     SQL watermarks, window assigners of the TVFs, window aggregation functions
    pandas_calc.py    a Calc calling pandas UDFs: bundled rows, each pandas call once per Arrow batch
    columnar_calc.py  table.exec.columnar.enabled: projection/filter per batch with pyarrow.compute kernels
                      (both run on the runtime's bundled_map operator: flushed before watermarks and barriers)
"""
