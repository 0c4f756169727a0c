"""`TwoPhaseCommitSinkFunction`: Flink's base for exactly-once sinks written as a SinkFunction.

A subclass writes each record into the current *transaction* (`invoke(txn, value, context)`).
At each checkpoint the transaction is pre-committed (flushed, not yet visible) and kept in the
checkpoint under its id, and a new one begins; once the checkpoint completed, the transactions
of it and of earlier ones are committed. A subtask restored from a checkpoint commits the
pre-committed transactions it holds again (`recover_and_commit`, idempotent: they belong to a
completed checkpoint whether or not the commit happened) and aborts the transaction that was open
at that checkpoint (`recover_and_abort`: its records will be replayed).

Without checkpointing nothing would ever commit, so at the end of a bounded input the open and
pending transactions are committed (Flink commits them with its final checkpoint).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, Generic, TypeVar

from strom.common.typeinfo import Types
from strom.datastream.functions import CheckpointedFunction, CheckpointListener, SinkFunction
from strom.datastream.state import ListStateDescriptor

IN = TypeVar("IN")
TXN = TypeVar("TXN")

_STATE_NAME = "two-phase-commit-state"


class TwoPhaseCommitSinkFunction(SinkFunction, CheckpointedFunction, CheckpointListener, Generic[IN, TXN]):
    """Subclasses implement begin_transaction, invoke(txn, value, context), pre_commit, commit, abort;
    transactions must be picklable (they go into checkpoints)."""

    def __init__(self) -> None:
        self._current: Any = None
        self._pending: dict[int, Any] = {}  # checkpoint id -> pre-committed transaction
        self._state: Any = None

    # -- what a subclass writes --------------------------------------------------------------------
    @abstractmethod
    def begin_transaction(self) -> TXN:
        """Start a transaction records are written into."""

    @abstractmethod
    def invoke_transaction(self, transaction: TXN, value: IN, context: Any) -> None:
        """Write one record into `transaction` (Flink's invoke(txn, value, context))."""

    @abstractmethod
    def pre_commit(self, transaction: TXN) -> None:
        """Make the transaction durable (flush), still invisible; after this it must be committable."""

    @abstractmethod
    def commit(self, transaction: TXN) -> None:
        """Make the transaction visible. Must be idempotent (a restored job commits again)."""

    @abstractmethod
    def abort(self, transaction: TXN) -> None:
        """Discard the transaction."""

    def recover_and_commit(self, transaction: TXN) -> None:
        """Commit a transaction from a restored checkpoint (it may be committed already)."""
        self.commit(transaction)

    def recover_and_abort(self, transaction: TXN) -> None:
        """Abort the transaction that was open at the restored checkpoint."""
        self.abort(transaction)

    # -- the protocol ---------------------------------------------------------------------------------
    def invoke(self, value: IN, context: Any) -> None:
        self.invoke_transaction(self._current, value, context)

    def initialize_state(self, context: Any) -> None:
        self._state = context.get_operator_state_store().get_list_state(
            ListStateDescriptor(_STATE_NAME, Types.PICKLED_BYTE_ARRAY())
        )
        self._pending = {}
        if context.is_restored():
            for pending, current in list(self._state.get() or []):
                for cid in sorted(pending):
                    self.recover_and_commit(pending[cid])
                if current is not None:
                    self.recover_and_abort(current)
        self._state.clear()
        self._current = self.begin_transaction()

    def snapshot_state(self, context: Any) -> None:
        self.pre_commit(self._current)
        self._pending[context.get_checkpoint_id()] = self._current
        self._current = self.begin_transaction()
        self._state.update([(dict(self._pending), self._current)])

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        for cid in sorted(c for c in self._pending if c <= checkpoint_id):
            self.commit(self._pending.pop(cid))

    def finish(self) -> None:
        for cid in sorted(self._pending):
            self.commit(self._pending.pop(cid))
        if self._current is not None:
            self.pre_commit(self._current)
            self.commit(self._current)
            self._current = None

    def close(self) -> None:
        # a failed or cancelled task: the open transaction is left to the restore's recover_and_abort
        # (aborting here could race the restored subtask); nothing else to release
        pass
