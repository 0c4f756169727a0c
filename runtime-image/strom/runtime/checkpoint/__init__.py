"""Checkpoint storage: where completed checkpoints and savepoints live, and what they contain.

`storage` reads and writes objects under a `file://` or `s3://` root, `layout` names Flink's
directories inside it, `metadata` is the self-contained `_metadata` document of one checkpoint
or savepoint, and `retention` decides which completed checkpoints are kept and deletes the rest.
"""
