"""Micro benchmark of channels: records/s through a local channel vs a TCP channel.

Buffers of 1024 small tuples `(i, i % 100, 1.5)` go from a producer to a consumer that polls an
InputGate, with Flink's default of 10 credits per channel (2 exclusive + 8 floating):
  local            LocalChannel, producer thread -> consumer thread (no serialization)
  serde            serialize_item + deserialize_item alone, one thread (the floor of a TCP channel)
  tcp (threads)    RemoteOutputChannel -> DataServer, producer thread in the same process
  tcp (processes)  the producer in a spawned child process, as across TaskManagers
Figures only, no asserts; they vary with the machine's load.

    python -m benchmarks.channels [--buffers 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import multiprocessing
import threading
import time
from typing import Any

from strom.runtime.network.channels import InputGate
from strom.runtime.network.events import END_OF_PARTITION, EndOfPartition
from strom.runtime.network.serialization import deserialize_item, serialize_item
from strom.runtime.network.tcp_channels import ChannelId, DataServer, RemoteOutputChannel

BATCH = 1024
CAPACITY = 10
HOST = "127.0.0.1"
SECRET = b"the benchmark's cluster secret"  # both ends prove it (peer_auth), as in a cluster


def make_batch() -> tuple[list[Any], None, None]:
    return [(i, i % 100, 1.5) for i in range(BATCH)], None, None


def produce(channel: Any, buffers: int) -> None:
    batch = make_batch()
    for _ in range(buffers):
        channel.put(batch)
    channel.put(END_OF_PARTITION)


def produce_remote(channel_id: ChannelId, port: int, buffers: int) -> None:
    out = RemoteOutputChannel(channel_id, HOST, port, secret=SECRET)
    produce(out, buffers)
    out.close()


def consume(gate: InputGate) -> tuple[int, float]:
    """Records received until end of partition, and seconds from the first buffer to the end."""
    records = 0
    start = 0.0
    poll = gate.poll
    while True:
        got = poll(1.0)
        if got is None:
            continue
        item = got[1]
        if type(item) is tuple:
            if not start:
                start = time.perf_counter()
            else:
                records += len(item[0])  # the first buffer starts the clock
        elif type(item) is EndOfPartition:
            return records, time.perf_counter() - start
        else:
            raise RuntimeError(f"unexpected item {item!r}")


def run_local(buffers: int) -> float:
    gate = InputGate()
    ch = gate.add_channel(1, CAPACITY)
    t = threading.Thread(target=produce, args=(ch, buffers), daemon=True)
    t.start()
    records, seconds = consume(gate)
    t.join()
    return records / seconds


def run_serde(buffers: int) -> float:
    batch = make_batch()
    start = time.perf_counter()
    for _ in range(buffers):
        deserialize_item(serialize_item(batch))
    return buffers * BATCH / (time.perf_counter() - start)


def run_tcp(buffers: int, *, process: bool, run: int) -> tuple[float, float]:
    with DataServer(HOST, 0, secret=SECRET) as server:
        port = server.start()
        cid = ChannelId("bench", run, "source->sink", 0, 0)
        gate = InputGate()
        server.expect(cid, gate.add_channel(1, CAPACITY))
        if process:
            child = multiprocessing.get_context("spawn").Process(target=produce_remote, args=(cid, port, buffers))
            child.start()
            records, seconds = consume(gate)
            child.join()
            return records / seconds, 0.0
        out = RemoteOutputChannel(cid, HOST, port, secret=SECRET)
        t = threading.Thread(target=produce, args=(out, buffers), daemon=True)
        t.start()
        records, seconds = consume(gate)
        t.join()
        out.close()
        return records / seconds, out.bytes_sent / (buffers + 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--buffers", type=int, default=2000, help="buffers of 1024 records per run")
    ap.add_argument("--repeat", type=int, default=3, help="runs per variant; the best is reported")
    args = ap.parse_args()
    results: dict[str, float] = {}
    frame_bytes = 0.0
    for run in range(args.repeat):
        figures = {
            "local": run_local(args.buffers),
            "serde": run_serde(args.buffers),
        }
        figures["tcp (threads)"], frame_bytes = run_tcp(args.buffers, process=False, run=run)
        figures["tcp (processes)"], _ = run_tcp(args.buffers, process=True, run=run)
        for name, rate in figures.items():
            results[name] = max(results.get(name, 0.0), rate)
    print(f"{args.buffers} buffers x {BATCH} records, {CAPACITY} credits, best of {args.repeat}")
    print(f"bytes per TCP buffer: {frame_bytes:.0f}")
    local = results["local"]
    for name, rate in results.items():
        print(f"{name:16s} {rate / 1e6:8.2f} M records/s   {rate / local:6.2f} x local")


if __name__ == "__main__":
    main()
