"""A minimal asyncio HTTP/1.1 keep-alive client: one connection, one request at a time.

Small on purpose, so the client costs little of the two cores the server also needs.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import orjson


class HttpError(RuntimeError):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}: {body[:300]!r}")
        self.status = status
        self.body = body


class Http:
    def __init__(self, host: str, port: int, *, token: str | None = None) -> None:
        self.host = host
        self.port = port
        self.token = token
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> None:
        self._reader, self._writer = await asyncio.open_connection(self.host, self.port)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await self._writer.wait_closed()
            self._writer = self._reader = None

    async def request(self, method: str, path: str, body: bytes | None = None) -> bytes:
        """Send one request; return the body of a 2xx response, else raise HttpError."""
        if self._writer is None:
            await self._connect()
        assert self._reader is not None and self._writer is not None
        head = [f"{method} {path} HTTP/1.1", f"Host: {self.host}:{self.port}"]
        if self.token:
            head.append(f"Authorization: Bearer {self.token}")
        if body is not None:
            head += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        self._writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + (body or b""))
        raw = await self._reader.readuntil(b"\r\n\r\n")
        lines = raw.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
        if "content-length" in headers:
            data = await self._reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int((await self._reader.readuntil(b"\r\n")).strip(), 16)
                chunk = await self._reader.readexactly(size + 2)
                if size == 0:
                    break
                parts.append(chunk[:-2])
            data = b"".join(parts)
        else:
            data = await self._reader.read()
            await self.close()
        if headers.get("connection", "").lower() == "close":
            await self.close()
        if not 200 <= status < 300:
            raise HttpError(status, data)
        return data

    async def post_json(self, path: str, payload: Any) -> Any:
        return orjson.loads(await self.request("POST", path, orjson.dumps(payload)))
