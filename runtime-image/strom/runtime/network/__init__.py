"""Runtime: network. How records and events travel between subtasks, and who may connect.

Channels (credit-based back pressure, bounded in bytes):

    events.py             what travels besides record batches: watermarks, stream status, barriers, end of partition
    channels.py           in-process `LocalChannel`s and `InputGate`s
    record_writer.py      a producer's records partitioned over its output channels, in buffers
    network_memory.py     buffer sizes, credits per channel, a slot worker's network budget
    serialization.py      channel items (record batches, events) to bytes for remote channels
    tcp_protocol.py       the wire protocol: channel ids, handshake, frame headers, channel failures
    tcp_channels.py       `RemoteOutputChannel`: the producer end of a channel over TCP
    data_server.py        `DataServer`: the consumer end, one TCP server per worker process

Addresses and security (used by the RPC and data ports alike):

    addresses.py          what a process binds and a TaskManager advertises, with one-line errors
    cluster_secret.py     the cluster secret every connection proves it knows
    peer_auth.py          peer authentication: the one place that decides whether a peer may talk
    secure_connections.py TLS (when internal TLS is on), then peer authentication, on every connection
"""
