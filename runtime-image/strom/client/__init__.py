"""Clients of a running JobManager: the `strom submit/list/info/cancel/savepoint/stop` commands.

    commands.py      the client commands: options (`--jobmanager`/REST address), help texts, table
                     output; `savepoint` and `stop` trigger and poll the savepoint operation
    rest_client.py   a small synchronous client of the JobManager's REST API (urllib; one-line errors
                     for an unreachable JobManager or an error answer)

`strom.cli` dispatches to `commands`; `commands` talks only through `rest_client`, so the paths it
uses are the ones runtime/jobmanager/rest_api.py serves.
"""
