"""Websockets: runtimes ingest events; staff inspectors watch runs with gap-free resume.

An inspector gets a snapshot, then every later event in order. It joins the run's group
*before* reading the log, and drops anything at or below the last seq it sent, so events that
commit while the snapshot is read are neither lost nor duplicated. A group message whose seq
jumps ahead (the layer dropped one) makes it re-read the log from its last seq. A dropped *tail*
shows no gap, and a layer may forget a member (in-memory expiry, a Redis restart), so the
consumer also re-joins its group and re-reads the log on every ping and on an idle timer
(docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any
from urllib.parse import parse_qs

import orjson
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer, AsyncWebsocketConsumer
from django.conf import settings

from runs import ratelimit, selectors, services
from runs.api import bearer_secret, json_decode, token_rate_check
from runs.db import kept_connection_sync_to_async
from runs.errors import ApiError, RateLimited
from runs.models import ApiToken

logger = logging.getLogger(__name__)

CATCH_UP_CHUNK = 500
RESYNC_INTERVAL_S = 5.0  # idle check after events arrived...
RESYNC_MAX_INTERVAL_S = 60.0  # ...backing off to this while the run is quiet
PING_RESYNC_MIN_S = 1.0  # pings re-read the log at most this often
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHORIZED = 4401
CLOSE_TOO_MANY = 4429
TOKEN_RECHECK_S = 1.0  # an open ingest socket notices a revoked token within this long


def _query(scope: dict[str, Any]) -> dict[str, str]:
    raw = scope.get("query_string", b"").decode("latin-1")
    return {key: values[-1] for key, values in parse_qs(raw).items()}


def _is_staff(scope: dict[str, Any]) -> bool:
    user = scope.get("user")
    return bool(user is not None and user.is_authenticated and user.is_staff)


class RunConsumer(AsyncWebsocketConsumer):
    """``/ws/runs/<run_id>/?after=<seq>``: snapshot, then every later event exactly once."""

    resync_interval = RESYNC_INTERVAL_S
    resync_max_interval = RESYNC_MAX_INTERVAL_S

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Deliver events without channels' per-message hop into the sync thread.

        channels (>= 4.2) runs ``close_old_connections`` in the one sync thread before every
        message it dispatches; ``run_events`` reads the database only through
        ``database_sync_to_async`` (which closes them itself), so for it the hop is pure cost:
        50 inspectors at 100 events/s made 5,000 thread switches a second (docs/benchmarks.md).
        """
        if message.get("type") == "run.events":
            self._last_group_message = time.monotonic()
            await self.run_events(message)
            return
        await super().dispatch(message)

    async def connect(self) -> None:
        # One sender at a time: group messages, pings and the idle timer all send events.
        self._lock = asyncio.Lock()
        self._resync_task: asyncio.Task[None] | None = None
        self._last_resync = 0.0
        self._last_group_message = 0.0
        if not _is_staff(self.scope):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.run_id: str = self.scope["url_route"]["kwargs"]["run_id"]
        self.group = services.run_group(self.run_id)
        self.last_seq = 0
        try:
            after = selectors.parse_seq(_query(self.scope).get("after"), name="after")
            snapshot = await self._snapshot(after)
        except ApiError as exc:
            await self.accept()
            await self.send(text_data=services.dumps({"type": "error", **exc.as_dict()}))
            await self.close(code=CLOSE_NOT_FOUND if exc.status == 404 else CLOSE_BAD_REQUEST)
            return
        await self.accept()
        # Join first, then read: anything committed from here on reaches us one way or both.
        await self.channel_layer.group_add(self.group, self.channel_name)
        self.last_seq = snapshot["seq"]
        await self.send(text_data=services.dumps(snapshot))
        await self._catch_up()
        self._resync_task = asyncio.ensure_future(self._resync_periodically())

    async def disconnect(self, code: int) -> None:
        task = getattr(self, "_resync_task", None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Inspectors only listen; a ping gets a pong with the last seq (a liveness check).

        The pong comes after re-reading the log, so a client that pings sees any events the
        layer dropped (the inspector page pings every 20 s).
        """
        if text_data and len(text_data) < 200 and '"ping"' in text_data:
            due = time.monotonic() - self._last_resync >= PING_RESYNC_MIN_S
            if self._resync_task is not None and due:
                async with self._lock:
                    await self._resync()
            await self.send(text_data=services.dumps({"type": "pong", "seq": self.last_seq}))

    async def run_events(self, message: dict[str, Any]) -> None:
        async with self._lock:
            for seq, text in message["items"]:
                if seq <= self.last_seq:
                    continue
                if seq > self.last_seq + 1:
                    logger.info(
                        "run %s inspector saw a gap (%s -> %s); resyncing",
                        self.run_id,
                        self.last_seq,
                        seq,
                    )
                    await self._catch_up()
                    if seq <= self.last_seq:
                        continue
                await self.send(text_data=text)
                self.last_seq = seq

    async def _resync(self) -> None:
        """Re-join the run's group (idempotent) and send what the log has past ``last_seq``."""
        self._last_resync = time.monotonic()
        try:
            await self.channel_layer.group_add(self.group, self.channel_name)
        except Exception:  # the log is still read; the next resync joins again
            logger.warning("run %s inspector: group re-join failed", self.run_id, exc_info=True)
        await self._catch_up()

    async def _resync_periodically(self) -> None:
        """The idle check: resync ``resync_interval`` s after events arrived, then less often
        (doubling up to ``resync_max_interval`` s) while nothing changes.

        Not while group messages keep arriving: then the membership works and a lost message
        shows as a gap in the next one. (Every inspector of a busy run re-reading the log at
        once every interval stalled a 50-socket fan-out for ~350 ms: docs/benchmarks.md.)
        """
        delay, seen = self.resync_interval, self.last_seq
        while True:
            await asyncio.sleep(delay)
            quiet_for = time.monotonic() - self._last_group_message
            if quiet_for < self.resync_interval:
                delay = self.resync_interval - quiet_for
                continue
            try:
                async with self._lock:
                    await self._resync()
            except Exception:  # never close the socket for this: the next round tries again
                logger.warning("run %s inspector resync failed", self.run_id, exc_info=True)
            if self.last_seq != seen:
                delay, seen = self.resync_interval, self.last_seq
            else:
                delay = min(delay * 2, self.resync_max_interval)

    @database_sync_to_async
    def _snapshot(self, after: int | None) -> dict[str, Any]:
        run = selectors.run_get(run_id=self.run_id)
        state = selectors.run_state_at(run=run, seq=after).as_response(run)
        return {"type": "snapshot", **state, "run": selectors.run_summary(run=run)}

    async def _catch_up(self) -> None:
        while True:
            batch = await database_sync_to_async(selectors.run_event_messages)(
                run_id=self.run_id, after=self.last_seq, limit=CATCH_UP_CHUNK
            )
            for seq, text in batch:
                await self.send(text_data=text)
                self.last_seq = seq
            if len(batch) < CATCH_UP_CHUNK:
                return


class RunListConsumer(AsyncWebsocketConsumer):
    """``/ws/runs/``: a message whenever a run starts or changes."""

    async def connect(self) -> None:
        if not _is_staff(self.scope):
            await self.close(code=CLOSE_FORBIDDEN)
            return
        await self.accept()
        await self.channel_layer.group_add(services.RUNS_GROUP, self.channel_name)

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(services.RUNS_GROUP, self.channel_name)

    async def dispatch(self, message: dict[str, Any]) -> None:
        if message.get("type") == "runs.run":  # no database: skip the sync-thread hop
            await self.runs_run(message)
            return
        await super().dispatch(message)

    async def runs_run(self, message: dict[str, Any]) -> None:
        await self.send(text_data=message["text"])


class IngestConsumer(AsyncJsonWebsocketConsumer):
    """``/ws/ingest/<run_id>/``: a runtime sends events; each is acked after commit."""

    async def connect(self) -> None:
        if not self._origin_allowed():
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.run_id = self.scope["url_route"]["kwargs"]["run_id"]
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1")
            for k, v in self.scope.get("headers", [])
        }
        secret = _query(self.scope).get("token") or bearer_secret(headers.get("authorization"))
        self.token: ApiToken | None = (
            await database_sync_to_async(services.api_token_authenticate)(secret=secret)
            if secret
            else None
        )
        if self.token is None:
            await self.close(code=CLOSE_UNAUTHORIZED)
            return
        try:
            await database_sync_to_async(token_rate_check)(self.token)
            run = await database_sync_to_async(selectors.run_get)(run_id=self.run_id)
            services.token_check_workflow(token=self.token, workflow_name=run.workflow_name)
            self.slot_key = ratelimit.token_key(self.token)
            if not ratelimit.socket_acquire(key=self.slot_key):
                del self.slot_key
                limit = settings.API_MAX_SOCKETS_PER_TOKEN
                raise RateLimited(
                    f"token: {limit} ingest sockets already open, at most {limit} "
                    "(API_MAX_SOCKETS_PER_TOKEN); close one first"
                )
        except ApiError as exc:
            await self.accept()
            await self.send_json({"type": "error", "status": exc.status, **exc.as_dict()})
            codes = {403: CLOSE_FORBIDDEN, 404: CLOSE_NOT_FOUND, 429: CLOSE_TOO_MANY}
            await self.close(code=codes.get(exc.status, CLOSE_BAD_REQUEST))
            return
        self.token_checked_at = time.monotonic()
        await self.accept()

    async def disconnect(self, code: int) -> None:
        self._disconnected = True
        flusher = getattr(self, "_flusher", None)
        if flusher is not None:  # events received before the close are still ingested
            with contextlib.suppress(Exception):
                await flusher
        if hasattr(self, "slot_key"):
            ratelimit.socket_release(key=self.slot_key)
            del self.slot_key

    async def _token_revoked(self) -> bool:
        """Re-read the token at most every TOKEN_RECHECK_S: revoking it closes open sockets."""
        now = time.monotonic()
        if now - self.token_checked_at < TOKEN_RECHECK_S:
            return False
        self.token_checked_at = now
        live = ApiToken.objects.filter(pk=self.token.pk, revoked=False)  # type: ignore[union-attr]
        return not await database_sync_to_async(live.exists)()

    def _origin_allowed(self) -> bool:
        # Runtimes send no Origin; a browser page that does must be one of ours.
        from channels.security.websocket import OriginValidator

        for name, value in self.scope.get("headers", []):
            if name == b"origin":
                validator = OriginValidator(None, settings.ALLOWED_HOSTS)
                from urllib.parse import urlparse

                return validator.valid_origin(urlparse(value.decode("latin-1")))
        return True

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Frames skip channels' per-message ``close_old_connections`` hop (see RunConsumer):
        ``receive`` reads the database only through ``database_sync_to_async``."""
        if message.get("type") == "websocket.receive":
            await self.websocket_receive(message)
            return
        await super().dispatch(message)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Queue the event; a flush task ingests what has queued, in order, as one batch.

        Replies (acks and errors) go out in the order the frames came, exactly as if each event
        were ingested on its own: a batch that fails is re-run one event at a time. Under load
        a batch holds every event that arrived while the previous one was committing (group
        commit); an idle socket's event is ingested at once.
        """
        if getattr(self, "_closing", False):  # revoked: nothing more from this socket
            return
        if await self._token_revoked():
            self._reply(
                {"type": "error", "status": 401, "error": "Authorization: token revoked"},
                close=CLOSE_UNAUTHORIZED,
            )
            return
        if text_data is None:
            self._reply({"type": "error", "error": "message: send JSON text frames"})
            return
        try:
            event = json_decode(text_data, what="message")
        except ApiError as exc:
            self._reply({"type": "error", "status": exc.status, **exc.as_dict()})
            return
        self._enqueue(("event", event))

    def _reply(self, message: dict[str, Any], *, close: int | None = None) -> None:
        self._enqueue(("send", message))
        if close is not None:
            self._closing = True
            self._enqueue(("close", close))

    def _enqueue(self, item: tuple[str, Any]) -> None:
        if not hasattr(self, "_queue"):
            self._queue: list[tuple[str, Any]] = []
            self._flusher: asyncio.Task[None] | None = None
        self._queue.append(item)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush())

    async def _flush(self) -> None:
        limit = max(1, settings.API_MAX_EVENTS_PER_BATCH)
        try:
            while self._queue:
                kind, value = self._queue[0]
                if kind == "send":
                    self._queue.pop(0)
                    await self._send_reply(value)
                elif kind == "close":
                    self._queue.clear()
                    await self.close(code=value)
                else:
                    batch = []
                    while self._queue and self._queue[0][0] == "event" and len(batch) < limit:
                        batch.append(self._queue.pop(0)[1])
                    await self._ingest(batch)
        except Exception:  # as an unhandled error in receive() did: log, close the socket
            logger.exception("ingest socket for run %s failed", self.run_id)
            self._queue.clear()
            with contextlib.suppress(Exception):
                await self.close(code=1011)

    async def _ingest(self, events: list[Any]) -> None:
        """Ingest a batch and ack each event; if it fails, ingest its events one by one."""
        try:
            # Not in the one thread-sensitive thread: channels dispatches every frame through
            # it (close_old_connections), so an ingest there would hold up the frames that
            # should queue for the next batch. One flush per socket keeps the order.
            with services.broadcasts_collected() as broadcasts:
                result = await kept_connection_sync_to_async(services.event_ingest)(
                    run_id=self.run_id, events=events, token=self.token
                )
            await services.broadcasts_send(broadcasts)
        except ApiError as exc:
            if len(events) > 1:
                for event in events:  # the batch stored nothing: replay it event by event
                    await self._ingest([event])
                return
            await self._send_reply({"type": "error", "status": exc.status, **exc.as_dict()})
            return
        for ack in result.acks:
            await self._send_reply({"type": "ack", "seq": ack["seq"], "flips": ack["flips"]})

    async def _send_reply(self, message: dict[str, Any]) -> None:
        if not getattr(self, "_disconnected", False):  # the runtime re-sends unacked events
            await self.send_json(message)

    async def encode_json(self, content: Any) -> str:  # type: ignore[override]
        return orjson.dumps(content).decode()
