"""The sending side of tests/harness/test_transport_fidelity.py, in a process of its own as the runner is: for
each case name it receives, it builds the value (transport_cases) and sends it the way the runner sends an
answer (CPU memory as bytes, CUDA memory as IPC handles), then keeps it alive until asked for the next.

Run as ``python transport_peer.py FD DEVICE``."""

from __future__ import annotations

import os
import socket
import sys

from transport_cases import CASES

from harness import cuda_ipc, transport


def serve(link: transport.Link, device: str) -> None:
    while True:
        try:
            request, _ = link.receive()
        except EOFError:
            return
        value = CASES[request["case"]](device)
        storages: transport.Storages = []
        meta = transport.pack(value, storages)
        described = [
            {"cpu": s.nbytes()} if s.device.type == "cpu" else {"cuda": cuda_ipc.share_cuda(s)} for s in storages
        ]
        link.send(
            {"value": meta, "storages": described}, transport.cpu_blobs([s for s in storages if s.device.type == "cpu"])
        )


if __name__ == "__main__":
    serve(transport.Link(socket.socket(fileno=int(sys.argv[1])), 1 << 30), sys.argv[2])
    os._exit(0)  # as the runner leaves: no interpreter teardown of torch (CUDA IPC memory the judge may still map)
