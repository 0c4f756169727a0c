"""Strom: stream processing with Flink's model and PyFlink's API, in Python.

A program flows down this list: the user API records it, `graph` turns it into graphs, the runtime
(or, in BATCH mode, Spark) runs them.

    common/        what every layer shares: config options, ids, job status, types and rows, time,
                   serialization, key groups, the JobClient contract
    datastream/    the DataStream API (`pyflink.datastream`): a program records transformations
    table/         Table API & SQL (`pyflink.table`): sql/ parses Flink SQL, planner/ plans onto DataStream
    connectors/    sources and sinks (collection, file, socket, datagen, number sequence, nexmark/, kafka/, jdbc/)
    graph/         transformations -> StreamGraph -> JobGraph (operator chaining); pure, no threads or sockets
    runtime/       what runs a JobGraph: JobManager, TaskManagers, tasks, operators, network, state,
                   checkpoints, metrics (see runtime/__init__)
    batch/         BATCH runtime mode: a bounded program's StreamGraph run on Apache Spark through PySpark
    metrics/       `pyflink.metrics`: the runtime's metric types under PyFlink's module path
    client/        `strom submit/list/info/cancel/savepoint/stop` over a JobManager's REST API
    web/           the dashboard's built assets, served by the JobManager's REST endpoint
    cli.py         the `strom` command (`strom run`, `jobmanager`, `taskmanager`, client commands)
    cli_help.py    the help texts of `strom` and its commands, and their shared exit codes
    run_progress.py  `strom run`'s periodic progress line (records in/out and rates, from the JobManager)
    testing.py     helpers for testing jobs in a few lines (`collect`, `punctuated_watermarks`)

`env.execute()` never imports the runtime: datastream/executors.py loads the executor by name
(runtime/local_executor.py, or batch/spark_executor.py in BATCH mode), and the runtime builds
operators from the kinds the graphs carry (runtime/operators/registry.py).

Layering, checked by the import-linter contracts in pyproject.toml (`lint-imports`):
  * datastream, common, graph and table never import runtime (the user API builds graphs);
  * table builds on datastream, never the reverse (datastream, common, graph and connectors never
    import table);
  * the connectors (collection, number_sequence, datagen, file, socket, source_function, jdbc) are
    independent of each other;
  * runtime/state: the state API knows no backend; heap and rocksdb never import each other;
    operators, tasks and checkpoint reach keyed state through the state API only;
  * the engine never imports the operator (`strom_operator`), which reaches the engine only
    through the JobManager's REST API.
"""

__version__ = "0.1.0"
