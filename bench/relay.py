"""The baseline of B1/B3: a bare ``websockets`` relay (producer -> server -> consumers).

``python -m bench.relay PORT`` serves ``/produce`` (every text frame received is forwarded) and
``/consume`` (receives every forwarded frame). No parsing, no database, no channel layer: the
floor of what any websocket push of a runtime's event can cost on this machine.
"""

from __future__ import annotations

import asyncio
import sys

from websockets.asyncio.server import ServerConnection, broadcast, serve

consumers: set[ServerConnection] = set()


async def handler(ws: ServerConnection) -> None:
    path = ws.request.path if ws.request is not None else ""
    if path.startswith("/consume"):
        consumers.add(ws)
        try:
            await ws.wait_closed()
        finally:
            consumers.discard(ws)
    else:
        async for message in ws:
            broadcast(consumers, message)


async def main(port: int) -> None:
    async with serve(handler, "127.0.0.1", port, compression=None):
        await asyncio.get_running_loop().create_future()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
