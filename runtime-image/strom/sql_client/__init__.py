"""`strom sql`: Flink's SQL Client for Strom.

An interactive shell (prompt_toolkit: line editing, history, completion, statements ending with ';'),
`-f script.sql` and `-i init.sql`, Flink's three result displays (`table`, `changelog`, `tableau`) and
Flink's messages. Statements run on one TableEnvironment through the shared script runner
(strom.table.sql_script); jobs run on an embedded mini-cluster, or with `--jobmanager HOST:PORT` on a running
cluster through its REST API.

Rooms: options (the command line), client_options (the session's `sql-client.*` keys), messages (what each
statement prints), results (materializing a changelog), display (drawing tableau, changelog and table views),
result_view (the terminal loop showing a running query), completion, executors (local or REST), session (one
statement -> its display), shell (the interactive loop), command (wiring).
"""
