"""Length-prefixed JSON records: the framing of the result channel and of the harness server's socket.

A record is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON holding one object.
The reader refuses oversized or malformed records instead of guessing, because the worker's end of
the result pipe lives in the same process as untrusted code.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import Any

MAX_RECORD_BYTES = 64 * 1024 * 1024
_HEADER = struct.Struct(">I")


class ChannelError(Exception):
    """The other end sent something that is not a well-formed record."""


def encode(record: dict[str, Any]) -> bytes:
    body = json.dumps(record, separators=(",", ":")).encode()
    if len(body) > MAX_RECORD_BYTES:
        raise ValueError(f"record of {len(body)} bytes exceeds the {MAX_RECORD_BYTES}-byte limit")
    return _HEADER.pack(len(body)) + body


def write_record(fd: int, record: dict[str, Any]) -> None:
    """Write one record to a pipe, looping over partial writes."""
    view = memoryview(encode(record))
    while view:
        view = view[os.write(fd, view) :]


def send_record(sock: socket.socket, record: dict[str, Any]) -> None:
    sock.sendall(encode(record))


class RecordReader:
    """Turns a byte stream back into records, however the bytes were split."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self.pending: list[dict[str, Any]] = []  # records read ahead by ``read_record``

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self._buffer += data
        records = []
        while len(self._buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self._buffer)
            if size > MAX_RECORD_BYTES:
                raise ChannelError(f"record claims {size} bytes, over the {MAX_RECORD_BYTES}-byte limit")
            end = _HEADER.size + size
            if len(self._buffer) < end:
                break
            body = bytes(self._buffer[_HEADER.size : end])
            del self._buffer[:end]
            try:
                record = json.loads(body)
            except ValueError as exc:
                raise ChannelError(f"record is not JSON: {exc}") from exc
            if not isinstance(record, dict):
                raise ChannelError(f"record is a {type(record).__name__}, not an object")
            records.append(record)
        return records

    @property
    def partial(self) -> bool:
        """True while a record has started but not finished (a truncated stream at EOF)."""
        return bool(self._buffer)


def read_record(fd: int, reader: RecordReader) -> dict[str, Any]:
    """Block until ``reader`` has a whole record from ``fd``; EOFError when the other end closed."""
    while not reader.pending:
        data = os.read(fd, 1 << 16)
        if not data:
            raise EOFError("the channel was closed")
        reader.pending.extend(reader.feed(data))
    return reader.pending.pop(0)


class Outbox:
    """The worker's end of the result channel: every record carries the run's nonce.

    Only the process that made it writes: a copy of the worker forked by the submission (whose code then
    runs on in the copy) ends instead, so it cannot add records to the run.
    """

    def __init__(self, fd: int, nonce: str) -> None:
        self.fd = fd
        self._nonce = nonce
        self._owner = os.getpid()

    def send(self, kind: str, **fields: Any) -> None:
        if os.getpid() != self._owner:
            os._exit(0)
        write_record(self.fd, {"nonce": self._nonce, "t": kind, **fields})

    def progress(self, stage: str, index: int = 0, total: int = 0, detail: str = "") -> None:
        self.send("progress", progress={"stage": stage, "index": index, "total": total, "detail": detail})
