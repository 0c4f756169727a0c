"""StreamTask: one parallel subtask of a JobVertex, run as a mailbox loop in one thread.

A source task pulls batches from its source operator; other tasks take buffers and
events from their input gate. Between items the loop runs mailbox actions and due
processing-time timers, and flushes output buffers when idle or when the buffer
timeout expires. At the end of input: end_input and finish every operator head to
tail, flush, send end-of-partition downstream, close.

Checkpoints: a source task snapshots when the coordinator's trigger runs in its mailbox;
other tasks when the barrier aligned on their inputs (`barrier_alignment`). The task
forwards the barrier, copies its operators' state (the synchronous part) and hands the
copies to its `CheckpointResponder`, which serializes, uploads and acknowledges off the
task thread.

Unaligned checkpoints (`execution.checkpointing.unaligned.enabled`, EXACTLY_ONCE, never savepoints):
the barrier overtakes the records buffered in the task's writers (Flink's priority event) and in
its input queues; the task snapshots on the first barrier, and hands the snapshot over once the
in-flight data of every input is known (`BarrierAligner`), with that data and the overtaken output
records as the task's channel state. A restored task puts its channel state back first: input
channel state in front of its queues, output channel state into its writers (`recover_channel_state`).
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

from strom.common import config_options as opts
from strom.common.key_groups import KeyGroupRange
from strom.common.time import MIN_WATERMARK
from strom.datastream.functions import CheckpointListener
from strom.runtime.checkpoint.channel_state import ChannelState
from strom.runtime.checkpoint.options import barrier_alignment
from strom.runtime.network.channels import InputGate, TaskCancelledError
from strom.runtime.network.events import CheckpointBarrier, EndOfPartition, StreamStatusEvent, WatermarkEvent
from strom.runtime.network.tcp_protocol import ChannelFailure
from strom.runtime.state.operator_snapshots import OperatorSnapshot, snapshot_operator
from strom.runtime.tasks.barrier_alignment import BarrierAligner
from strom.runtime.tasks.processing_time import ProcessingTimeService
from strom.runtime.tasks.watermark_valve import StatusWatermarkValve

log = logging.getLogger("strom.runtime.task")

CREATED, DEPLOYING, RUNNING, FINISHED, CANCELING, CANCELED, FAILED = (
    "CREATED",
    "DEPLOYING",
    "RUNNING",
    "FINISHED",
    "CANCELING",
    "CANCELED",
    "FAILED",
)

_PROMOTE_INTERVAL_S = 0.02
# How long a task whose peer was cancelled waits for its own cancel (`_await_own_cancel`); the
# JobManager's cancel reaches every task within moments, this only bounds a cancel that never comes.
OWN_CANCEL_WAIT_S = 10.0

# One operator's synchronous snapshot with what the metadata needs to address it.
OperatorSnapshotItem = tuple[OperatorSnapshot, int, KeyGroupRange]  # (snapshot, max parallelism, key groups)


class CheckpointResponder(Protocol):
    """Takes a task's synchronous snapshots; writes them and acknowledges off the task thread."""

    def snapshot_taken(
        self,
        task_key: Any,
        checkpoint_id: int,
        items: list[OperatorSnapshotItem],
        channel_state: ChannelState | None = None,
    ) -> None: ...


class StreamTask:
    def __init__(
        self,
        *,
        name: str,
        subtask_index: int,
        parallelism: int,
        operators: list[Any],
        outputs: list[Any],
        writers: list[Any],
        gate: InputGate | None,
        processing_time_service: ProcessingTimeService,
        config: Any,
        on_done: Callable[[StreamTask], None] | None = None,
    ) -> None:
        self.name = name
        self.subtask_index = subtask_index
        self.parallelism = parallelism
        self.operators = operators
        self.outputs = outputs
        self.head = operators[0]
        self.writers = writers
        self.gate = gate
        self.pts = processing_time_service
        self.config = config
        self.on_done = on_done
        self.state = CREATED
        self.failure: BaseException | None = None
        self.failure_trace: str | None = None
        self.cancelled = False
        self._cancel_requested = threading.Event()  # set by cancel(): this task's own cancel arrived
        self.mailbox: deque[Callable[[], None]] = deque()
        # Totals for TaskMetrics (metrics/task_metrics.py), bumped per batch or per wait, never per record.
        self.records_in = 0
        self.idle_ns = 0
        self.idle_since_ns = 0  # non-zero while waiting for input: the wait in progress counts as idle
        self.started_ns = 0
        self.ended_ns = 0
        self.input_watermarks: dict[int, int] = {}
        self.buffer_timeout_s = (config.get(opts.BUFFER_TIMEOUT) if config is not None else 100) / 1000.0
        self.checkpoint_responder: CheckpointResponder | None = None
        self.checkpoint_key: Any = None
        self.aligner: BarrierAligner | None = None
        # stop-with-savepoint of a source task: the savepoint's id and mode while it is pending
        self._stop_savepoint: tuple[int, str] | None = None
        self._drained = False
        # an unaligned snapshot waiting for its input channel state: (checkpoint id, items, output state)
        self._unaligned: tuple[int, list[OperatorSnapshotItem], dict[int, Any]] | None = None
        self.thread = threading.Thread(target=self.run, name=f"{name} ({subtask_index + 1}/{parallelism})", daemon=True)

    @property
    def display_name(self) -> str:
        return f"{self.name} ({self.subtask_index + 1}/{self.parallelism})"

    def start(self) -> None:
        self.state = DEPLOYING
        self.thread.start()

    def submit(self, action: Callable[[], None]) -> None:
        """Run `action` in the task thread (mailbox)."""
        self.mailbox.append(action)
        if self.gate is not None:
            with self.gate.cond:
                self.gate.cond.notify_all()

    def enable_checkpointing(self, responder: CheckpointResponder, key: Any) -> None:
        """Before start: where snapshots go, and the key this task acknowledges under."""
        self.checkpoint_responder = responder
        self.checkpoint_key = key

    # -- checkpoints (all in the task thread, through the mailbox or the input loop) ------------------
    def trigger_checkpoint(self, checkpoint_id: int, timestamp: int, stop: str = "", savepoint: bool = False) -> None:
        """A source task starts checkpoint `checkpoint_id` (a mailbox action from the coordinator).

        `stop` makes it Flink's synchronous stop-with-savepoint: the source emits nothing after the
        barrier, so no record is processed twice once the job restores from the savepoint. 'drain'
        first emits the maximum watermark (every event-time window and timer fires into the
        savepoint's output) and, once the savepoint completed, ends the input as a bounded source does.
        """
        if self.state != RUNNING:
            return
        if stop == "drain":
            self.head.finish_input()
        unaligned, timeout = (False, -1) if savepoint or stop else barrier_alignment(self.config)
        self._checkpoint(CheckpointBarrier(checkpoint_id, timestamp, unaligned, timeout))
        if stop:
            self._stop_savepoint = (checkpoint_id, stop)

    def _checkpoint(self, barrier: CheckpointBarrier) -> None:
        responder = self.checkpoint_responder
        if responder is None:
            raise RuntimeError(
                f"{self.display_name} received checkpoint barrier {barrier.checkpoint_id} but checkpointing "
                "is not enabled for it"
            )
        cid, ts = barrier.checkpoint_id, barrier.timestamp
        for op in self.operators:
            op.prepare_snapshot_pre_barrier(cid)
        output: dict[int, Any] = {}
        if barrier.unaligned:
            for i, w in enumerate(self.writers):
                # the barrier jumps ahead of the records buffered in the writer: they are channel state
                overtaken = w.broadcast_priority(barrier)
                if overtaken:
                    output[i] = overtaken
        else:
            for w in self.writers:
                w.broadcast_event(barrier)  # flushes first: the records before the barrier go before it
        items: list[OperatorSnapshotItem] = []
        for op in self.operators:
            ctx = op.ctx
            snapshot = snapshot_operator(op, checkpoint_id=cid, checkpoint_timestamp=ts)
            items.append((snapshot, ctx.max_parallelism, ctx.key_group_range))
        if not barrier.unaligned:
            responder.snapshot_taken(self.checkpoint_key, cid, items)
            return
        self._unaligned = (cid, items, output)
        if self.gate is None:
            self._channel_state_complete(cid, {})

    def _channel_state_complete(self, checkpoint_id: int, inputs: dict[int, list[Any]]) -> None:
        """The in-flight input data of unaligned checkpoint `checkpoint_id` is known: hand the snapshot over."""
        pending = self._unaligned
        if pending is None or pending[0] != checkpoint_id or self.checkpoint_responder is None:
            return
        self._unaligned = None
        _cid, items, output = pending
        state = ChannelState(inputs=inputs, outputs=output) if inputs or output else None
        self.checkpoint_responder.snapshot_taken(self.checkpoint_key, checkpoint_id, items, state)

    def recover_channel_state(self, state: ChannelState) -> None:
        """Before the task starts: in-flight data of the restored checkpoint goes first, input channel
        state ahead of anything the producers send, output channel state ahead of any new record."""
        gate = self.gate
        for index, items in state.inputs.items():
            if gate is None or index >= len(gate.channels):
                raise RuntimeError(f"{self.display_name}: the checkpoint has in-flight data of input channel {index}")
            gate.recover(gate.channels[index], items)
        for index, buffered in state.outputs.items():
            if index >= len(self.writers):
                raise RuntimeError(f"{self.display_name}: the checkpoint has in-flight data of output {index}")
            self.writers[index].recover(buffered)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """Mailbox action: the checkpoint completed; functions implementing CheckpointListener hear it."""
        if self._stop_savepoint is not None and self._stop_savepoint == (checkpoint_id, "drain"):
            self._drained = True
        for op in self.operators:
            op.notify_checkpoint_complete(checkpoint_id)
            fn = op.function
            if isinstance(fn, CheckpointListener):
                fn.notify_checkpoint_complete(checkpoint_id)

    def notify_checkpoint_aborted(self, checkpoint_id: int) -> None:
        """Mailbox action: the checkpoint was abandoned; stop aligning it and tell the listeners."""
        if self.aligner is not None:
            self.aligner.abort(checkpoint_id)
        if self._unaligned is not None and self._unaligned[0] == checkpoint_id:
            self._unaligned = None
        if self._stop_savepoint is not None and self._stop_savepoint[0] == checkpoint_id:
            self._stop_savepoint = None  # the stop failed: the job goes on, as in Flink
        for op in self.operators:
            fn = op.function
            if isinstance(fn, CheckpointListener):
                fn.notify_checkpoint_aborted(checkpoint_id)

    def cancel(self) -> None:
        self.cancelled = True
        self._cancel_requested.set()
        if self.state not in (FINISHED, FAILED, CANCELED):
            self.state = CANCELING
        if self.gate is not None:
            self.gate.cancel()
        for w in self.writers:
            for ch in w.channels:
                ch.abort()
        cancel = getattr(self.head, "cancel", None)
        if cancel is not None:
            try:
                cancel()
            except Exception:  # noqa: BLE001 - cancelling must not fail
                pass

    # -- the loop ------------------------------------------------------------------------------------
    def run(self) -> None:
        try:
            for op in reversed(self.operators):
                op.open()
            self.state = RUNNING
            self.started_ns = time.perf_counter_ns()
            if self.gate is None:
                self._run_source()
            else:
                self._run_inputs()
            self._finish_operators()
            for w in self.writers:
                w.flush()
                w.close()
            self._close_operators()
            self.state = FINISHED
        except TaskCancelledError:
            if not self.cancelled:
                self._await_own_cancel()
            self.state = CANCELED
            self._deliver_completions()
            self._close_quietly()
        except BaseException as e:  # noqa: BLE001 - any failure fails the task with its traceback
            if self.cancelled:
                self.state = CANCELED
                self._deliver_completions()
            else:
                self.failure = e
                self.failure_trace = traceback.format_exc()
                self.state = FAILED
                # The trace travels to the JobManager (its log, the exception history, the client's
                # error); here it is detail of this process's log, so a terminal sees it once.
                log.info("%s switched from RUNNING to FAILED:\n%s", self.display_name, self.failure_trace)
            self._close_quietly()
        finally:
            self.ended_ns = time.perf_counter_ns()
            if self.on_done is not None:
                self.on_done(self)

    def _await_own_cancel(self) -> None:
        """A peer task was cancelled (its channel said so) before this task heard of the cancel. The
        JobManager cancels every task of the attempt at once, and a stop-with-savepoint sends the
        savepoint's completion to every task before that cancel: a peer's cancel can overtake ours
        (another slot process, another TaskManager), but our completion always arrives ahead of our
        own cancel. Ending now would drop that completion, and with it the commit of what the
        savepoint prepared (FileSink's pending files): Flink's stopped job ends only after every task
        heard of its savepoint. So wait for our cancel (bounded), then deliver what the mailbox holds."""
        self.state = CANCELING
        if not self._cancel_requested.wait(OWN_CANCEL_WAIT_S):
            log.info("%s: a peer was cancelled but this task's cancel did not follow; ending", self.display_name)

    def _deliver_completions(self) -> None:
        """A task cancelled right after a stop-with-savepoint still has the savepoint's completion in
        its mailbox (the JobManager sends it before the cancel): deliver it, so the transactions the
        savepoint prepared are committed (e.g. FileSink's pending files) rather than left to a restore."""
        notify = self.notify_checkpoint_complete
        for action in list(self.mailbox):
            if getattr(action, "func", None) == notify:
                try:
                    action()
                except Exception:  # noqa: BLE001 - a cancelled task reports nothing more
                    log.warning("%s: a checkpoint completion failed while cancelling", self.display_name, exc_info=True)

    def _close_quietly(self) -> None:
        for op in self.operators:
            try:
                op.close()
            except Exception:  # noqa: BLE001 - the first failure is the one reported
                pass

    def _close_operators(self) -> None:
        for op in self.operators:
            op.close()

    def _finish_operators(self) -> None:
        for i, op in enumerate(self.operators):
            if i > 0 or self.gate is None:
                op.end_input(1)
            op.finish()

    def _run_mailbox(self) -> None:
        mailbox = self.mailbox
        while mailbox:
            mailbox.popleft()()
        self.pts.run_due()

    def _flush(self) -> None:
        for w in self.writers:
            w.flush()

    def _run_source(self) -> None:
        head = self.head
        clock = time.perf_counter_ns
        last_flush = clock()
        timeout = int(self.buffer_timeout_s * 1e9)
        while True:
            if self.cancelled:
                raise TaskCancelledError()
            self._run_mailbox()
            if self._stop_savepoint is not None:
                if self._drained:
                    break
                # stopping: nothing more is read; wait for the savepoint's outcome or the cancel
                self._flush()
                time.sleep(0.005)
                continue
            before = clock()
            r = head.emit_next()
            if r is None:
                break
            now = clock()
            if r is False:
                # The reader had nothing to give: the time it spent looking is idle, not busy.
                self.idle_ns += now - before
                self._flush()
                last_flush = now
            elif now - last_flush >= timeout:
                self._flush()
                last_flush = now
        head.finish_input()

    def _run_inputs(self) -> None:
        gate = self.gate
        assert gate is not None
        head = self.head
        n_inputs = max(ch.input_index for ch in gate.channels) if gate.channels else 1
        by_input: dict[int, list[int]] = {}
        for ch in gate.channels:
            by_input.setdefault(ch.input_index, []).append(ch.index)
        local_index = {}
        for _inp, idxs in by_input.items():
            for j, ci in enumerate(idxs):
                local_index[ci] = j
        valves = {inp: StatusWatermarkValve(len(idxs)) for inp, idxs in by_input.items()}
        remaining = {inp: len(idxs) for inp, idxs in by_input.items()}
        open_inputs = len(by_input)
        two = n_inputs >= 2
        batch_fns = {1: head.process_batch1 if two else head.process_batch, 2: head.process_batch2}
        wm_fns = {1: head.process_watermark1 if two else head.process_watermark, 2: head.process_watermark2}
        last_flush = time.monotonic()
        timeout = self.buffer_timeout_s
        poll = gate.poll
        clock = time.perf_counter_ns
        in_wms = self.input_watermarks
        for inp in by_input:
            in_wms[inp] = MIN_WATERMARK
        mode = self.config.get(opts.CHECKPOINT_MODE) if self.config is not None else "EXACTLY_ONCE"
        aligner = self.aligner = BarrierAligner(gate, exactly_once=mode == "EXACTLY_ONCE")
        # aligned barriers that may turn unaligned are looked for in the queues now and then
        promote = barrier_alignment(self.config)[1] >= 0
        last_promote = 0.0
        while open_inputs:
            self._run_mailbox()
            if promote and (now_s := time.monotonic()) - last_promote >= _PROMOTE_INTERVAL_S:
                last_promote = now_s
                gate.promote_overdue_barriers(time.time() * 1000)
            if aligner.current >= 0:
                due = aligner.check_timeout()  # an aligned checkpoint that may switch to unaligned
                if due is not None:
                    self._checkpoint(due)
                    self._take_channel_state(aligner)
            got = poll(0)
            if got is None:
                self._flush()
                last_flush = time.monotonic()
                wait = timeout
                deadline = self.pts.next_deadline()
                if deadline is not None:
                    wait = max(0.0, min(wait, (deadline - self.pts.now()) / 1000.0))
                waiting_since = self.idle_since_ns = clock()
                got = poll(wait)
                self.idle_since_ns = 0
                self.idle_ns += clock() - waiting_since
                if got is None:
                    continue
            ch, item = got
            inp = ch.input_index
            if type(item) is tuple:
                self.records_in += len(item[0])
                batch_fns[inp](item[0], item[1], item[2])
                now = time.monotonic()
                if now - last_flush >= timeout:
                    self._flush()
                    last_flush = now
            elif type(item) is WatermarkEvent:
                wm = valves[inp].input_watermark(local_index[ch.index], item.timestamp)
                if wm is not None:
                    in_wms[inp] = wm
                    wm_fns[inp](wm)
            elif type(item) is StreamStatusEvent:
                wm, status = valves[inp].input_status(local_index[ch.index], item.idle)
                if wm is not None:
                    in_wms[inp] = wm
                    wm_fns[inp](wm)
                if status is not None:
                    head.process_status(status)
            elif type(item) is CheckpointBarrier:
                due = aligner.on_barrier(ch, item)
                if due is not None:
                    self._checkpoint(due)
                self._take_channel_state(aligner)
            elif type(item) is EndOfPartition:
                ch.finished = True
                due = aligner.on_channel_finished(ch)
                if due is not None:
                    self._checkpoint(due)
                self._take_channel_state(aligner)
                wm = valves[inp].channel_finished(local_index[ch.index])
                if wm is not None:
                    in_wms[inp] = wm
                    wm_fns[inp](wm)
                remaining[inp] -= 1
                if remaining[inp] == 0:
                    open_inputs -= 1
                    head.end_input(inp if two else 1)
            elif type(item) is ChannelFailure:
                raise item.to_exception()  # a remote producer is gone: fail (or cancel) this task
            else:
                raise TypeError(f"unexpected item on channel: {item!r}")

    def _take_channel_state(self, aligner: BarrierAligner) -> None:
        done = aligner.take_channel_state()
        if done is not None:
            self._channel_state_complete(*done)

