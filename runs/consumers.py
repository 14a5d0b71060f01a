"""Websockets: runtimes ingest events; staff inspectors watch runs with gap-free resume.

The consumers only connect, take frames, disconnect and hand group messages on: the resume
protocol is ``runs.resume.ResumeStream`` and the ingest batching ``runs.batching.IngestBatcher``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlparse

import orjson
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer, AsyncWebsocketConsumer
from channels.security.websocket import OriginValidator
from django.conf import settings

from contextadmin.errors import ApiError, BadRequest, RateLimited, Unauthorized
from runs import ratelimit, selectors
from runs.auth import authenticate, staff_session_check
from runs.batching import IngestBatcher, event_ingest_grouped
from runs.channels_overrides import DispatchWithoutConnectionHop
from runs.json_input import fields_check, json_decode
from runs.messages import (
    ack_message,
    batch_ack_message,
    error_message,
    json_text,
    pong_message,
)
from runs.models import ApiToken
from runs.resume import RESYNC_INTERVAL_S, RESYNC_MAX_INTERVAL_S, ResumeStream
from runs.services.broadcast import RUNS_GROUP, run_group
from runs.socket_tasks import task_stop
from runs.tokens import api_token_is_live

logger = logging.getLogger(__name__)

CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHORIZED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_TOO_MANY = 4429
CLOSE_CODES = {401: CLOSE_UNAUTHORIZED, 403: CLOSE_FORBIDDEN, 404: CLOSE_NOT_FOUND,
               429: CLOSE_TOO_MANY}
TOKEN_RECHECK_S = 1.0  # an open ingest socket notices a revoked token within this long
SESSION_RECHECK_S = 1.0  # an open inspector socket re-reads its session this often...
SESSION_WATCH_S = 2.0  # ...and at least this often while nothing is sent (a quiet run or list)
SHARED_READ_S = 0.5  # ...sharing a read younger than this with the other sockets (SharedReads)
PING_MAX_CHARS = 200


def _query(scope: dict[str, Any]) -> dict[str, str]:
    raw = scope.get("query_string", b"").decode("latin-1")
    return {key: values[-1] for key, values in parse_qs(raw).items()}


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    return next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == name), None)


def _staff_check(scope: dict[str, Any]) -> None:
    """Raise unless the socket's session is a staff user's (its user is read at connect)."""
    authenticate(authorization=None, user=scope.get("user"), session_allowed=True)


class RefusedSocket(AsyncWebsocketConsumer):
    """Any websocket path without a route (or with a malformed run id): refused at the
    handshake (Daphne answers 403), before authentication, a database read or a group name."""

    async def connect(self) -> None:
        logger.info("websocket refused: no route for %r", self.scope.get("path", "")[:200])
        await self.close()


class SharedReads:
    """One database read at a time per key, shared by every socket that asks for it.

    Fifty inspector sockets of one operator connect together and would re-read the same
    session together every second, and a thousand ingest sockets of ten tokens would re-read
    their token a thousand times a second: each a hop onto channels' one sync thread. A read
    younger than SHARED_READ_S (or still under way) answers them all, so a lost session or a
    revoked token is noticed within its recheck interval + SHARED_READ_S.
    """

    def __init__(self) -> None:
        self._reads: dict[Any, tuple[float, asyncio.Future[Any]]] = {}

    async def read(self, *, key: Any, read: Callable[[], Any]) -> Any:
        """Return ``read()``'s answer (or raise its error), read at most once per key per
        SHARED_READ_S in the thread channels gives database work."""
        now = time.monotonic()
        kept = self._reads.get(key)
        loop = asyncio.get_running_loop()
        if kept is None or now - kept[0] >= SHARED_READ_S or kept[1].get_loop() is not loop:
            if len(self._reads) >= 10_000:  # forget reads too old to share
                self._reads = {
                    k: kept for k, kept in self._reads.items() if now - kept[0] < SHARED_READ_S
                }
            future = asyncio.ensure_future(database_sync_to_async(read)())
            kept = self._reads[key] = (now, future)
        return await asyncio.shield(kept[1])


session_reads = SharedReads()
token_reads = SharedReads()


class StaffSocket(DispatchWithoutConnectionHop, AsyncWebsocketConsumer):
    """An inspector socket: a staff session at connect, and still one before anything more is
    sent, re-read at most every SESSION_RECHECK_S (as ingest sockets re-read their token).

    Logging out, a deleted or flushed session, an inactive user, a password change (4401) or
    a user no longer staff (4403) closes the socket before its next message, and within
    SESSION_WATCH_S when none comes: a page of a quiet run must not read "live" to a user
    who may no longer watch it.
    """

    session_checked_at = 0.0
    session_lost = False
    session_watch: asyncio.Task[None] | None = None

    def _session_admitted(self) -> bool:
        """At connect: the session's user as the middleware read it."""
        try:
            _staff_check(self.scope)
        except ApiError:
            return False
        self.session_checked_at = time.monotonic()
        return True

    async def _session_live(self) -> bool:
        """Whether the session may still be sent to; if not, close (once) and say so."""
        if self.session_lost:
            return False
        now = time.monotonic()
        if now - self.session_checked_at < SESSION_RECHECK_S:
            return True
        self.session_checked_at = now
        key = getattr(self.scope.get("session"), "session_key", None)
        try:
            await session_reads.read(
                key=key, read=lambda: staff_session_check(session_key=key)
            )
        except ApiError as exc:
            self.session_lost = True
            await self.close(code=CLOSE_CODES.get(exc.status, CLOSE_FORBIDDEN))
            return False
        return True

    def _session_watch_start(self) -> None:
        """Re-read the session every SESSION_WATCH_S while the socket is open."""
        self.session_watch = asyncio.ensure_future(self._session_watching())

    async def _session_watch_stop(self) -> None:
        await task_stop(self.session_watch)
        self.session_watch = None

    async def _session_watching(self) -> None:
        while True:
            await asyncio.sleep(SESSION_WATCH_S)
            try:
                if not await self._session_live():
                    return
            except Exception:  # a failed read (database away): the next round reads again
                logger.warning("inspector socket: session re-read failed", exc_info=True)


class RunConsumer(StaffSocket):
    """``/ws/runs/<run_id>/?after=<seq>``: snapshot, then every later event exactly once.

    It joins the run's group *before* reading the log: anything committed from then on
    reaches it one way or both, and ``ResumeStream`` sends each event once.
    """

    resync_interval = RESYNC_INTERVAL_S
    resync_max_interval = RESYNC_MAX_INTERVAL_S
    stream: ResumeStream | None = None
    group: str | None = None
    run_id = ""

    async def connect(self) -> None:
        if not self._session_admitted():
            await self.close(code=CLOSE_FORBIDDEN)
            return
        run_id: str = self.scope["url_route"]["kwargs"]["run_id"]
        self.run_id = run_id
        try:
            after = selectors.parse_seq(_query(self.scope).get("after"), name="after")
            snapshot = await database_sync_to_async(selectors.run_snapshot)(
                run_id=run_id, after=after
            )
        except ApiError as exc:
            await self.accept()
            await self.send(text_data=json_text(error_message(exc)))
            await self.close(code=CLOSE_NOT_FOUND if exc.status == 404 else CLOSE_BAD_REQUEST)
            return
        await self.accept()
        self.group = run_group(run_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        self.stream = ResumeStream(
            last_seq=snapshot["seq"],
            send=self._send_text,
            read_after=lambda seq: database_sync_to_async(selectors.run_event_messages)(
                run_id=run_id, after=seq
            ),
            rejoin=lambda: self.channel_layer.group_add(self.group, self.channel_name),
            chunk=selectors.CATCH_UP_CHUNK,
            resync_interval=self.resync_interval,
            resync_max_interval=self.resync_max_interval,
            name=run_id,
        )
        await self.send(text_data=json_text(snapshot))
        await self.stream.catch_up()
        self.stream.start()
        self._session_watch_start()

    async def disconnect(self, code: int) -> None:
        await self._session_watch_stop()
        if self.stream is not None:
            await self.stream.stop()
        if self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Inspectors only listen: a ping gets a pong with the last seq; anything else is
        ignored (so this is not a JSON consumer: no frame can close the socket)."""
        if self.stream is None or not text_data or len(text_data) >= PING_MAX_CHARS:
            return
        if '"ping"' in text_data and await self._session_live() and await self._run_kept():
            seq = await self.stream.ping()
            await self.send(text_data=pong_message(seq=seq))

    async def _run_kept(self) -> bool:
        """A run deleted while its page is open (prune_runs) is said so at the next ping, as a
        reconnect would say it (an error message, then 4404), not answered as a quiet run."""
        if await database_sync_to_async(selectors.run_exists)(run_id=self.run_id):
            return True
        await self.send(text_data=json_text(error_message(selectors.run_not_found(self.run_id))))
        await self.close(code=CLOSE_NOT_FOUND)
        return False

    async def run_events(self, message: dict[str, Any]) -> None:
        """A batch's events, from ingest (``run.events``)."""
        if self.stream is not None and await self._session_live():
            await self.stream.deliver(message["items"])

    async def _send_text(self, text: str) -> None:
        """Everything the stream sends (live, catch-up, resync) goes through the session check."""
        if await self._session_live():
            await self.send(text_data=text)


class RunListConsumer(StaffSocket):
    """``/ws/runs/``: a message whenever a run starts or changes."""

    joined = False

    async def connect(self) -> None:
        if not self._session_admitted():
            await self.close(code=CLOSE_FORBIDDEN)
            return
        await self.accept()
        await self.channel_layer.group_add(RUNS_GROUP, self.channel_name)
        self.joined = True
        self._session_watch_start()

    async def disconnect(self, code: int) -> None:
        await self._session_watch_stop()
        if self.joined:
            await self.channel_layer.group_discard(RUNS_GROUP, self.channel_name)

    async def runs_run(self, message: dict[str, Any]) -> None:
        """Runs started or changed (``runs.run``): one frame per run."""
        if await self._session_live():
            for text in message["texts"]:
                await self.send(text_data=text)


class IngestConsumer(DispatchWithoutConnectionHop, AsyncJsonWebsocketConsumer):
    """``/ws/ingest/<run_id>/``: a runtime sends events; each is acked after commit.

    A frame is one event (acked ``{"type": "ack", "seq", "flips"}``), or a batch, the events
    POST's body ``{"events": [...]}`` (``RunReporter``'s websocket transport): stored all or
    nothing and answered ``{"type": "batch_ack", "last_seq", "flips", "acks"}`` as the POST
    answers, or ``{"type": "error", "status", "error", ...}`` as the POST refuses it.
    """

    token: ApiToken | None = None
    slot_key: str | None = None
    batcher: IngestBatcher | None = None
    token_checked_at = 0.0
    frame_bytes = 0  # the size of the frame being handled (receive, then receive_json)

    async def connect(self) -> None:
        if not self._origin_allowed():
            await self.close(code=CLOSE_FORBIDDEN)
            return
        run_id: str = self.scope["url_route"]["kwargs"]["run_id"]
        query_token = _query(self.scope).get("token")
        authorization = f"Bearer {query_token}" if query_token else _header(
            self.scope, b"authorization"
        )
        try:
            await self._admit(run_id=run_id, authorization=authorization)
        except Unauthorized:
            await self.close(code=CLOSE_UNAUTHORIZED)
            return
        except ApiError as exc:
            await self.accept()
            await self.send_json(error_message(exc))
            await self.close(code=CLOSE_CODES.get(exc.status, CLOSE_BAD_REQUEST))
            return
        self.batcher = IngestBatcher(
            ingest=lambda events: self._ingest(run_id, events),
            send=self.send_json,
            close=lambda code: self.close(code=code),
            limit=settings.API_MAX_EVENTS_PER_BATCH,
            name=run_id,
            ingest_whole=lambda events: self._ingest_whole(run_id, events),
            max_queued_bytes=settings.API_MAX_SOCKET_BACKLOG_BYTES,
        )
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.batcher is not None:  # events received before the close are still ingested
            await self.batcher.drain()
        if self.slot_key is not None:
            ratelimit.socket_release(key=self.slot_key)
            self.slot_key = None

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """A frame that is not JSON text gets an error reply and the socket stays open
        (channels' JSON consumer would close it); JSON goes on to ``receive_json``."""
        if self.batcher is None:  # refused at connect: the close is on its way
            return
        try:
            if not text_data:
                raise BadRequest("message: send JSON text frames")
            if not self.batcher.room_for(len(text_data)):
                self._backlog_refuse()
                return
            self.frame_bytes = len(text_data)
            await super().receive(text_data=text_data)
        except ApiError as exc:
            self.batcher.reply(error_message(exc))

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Queue the event for the next batch, unless the token was revoked meanwhile."""
        if self.batcher is None or self.batcher.closing:  # refused, or revoked: nothing more
            return
        if await self._token_revoked():
            self.batcher.reply(
                error_message(Unauthorized("Authorization: token revoked")),
                close=CLOSE_UNAUTHORIZED,
            )
            return
        if isinstance(content, dict) and "events" in content and "type" not in content:
            try:
                fields_check(content, allowed={"events"})  # as the events POST checks its body
            except BadRequest as exc:
                self.batcher.reply(error_message(exc))
                return
            self.batcher.batch(content["events"], size=self.frame_bytes)
            return
        self.batcher.event(content, size=self.frame_bytes)

    def _backlog_refuse(self) -> None:
        """A client sending faster than its frames are stored, without waiting for acks: told
        so and closed (4429) after the replies to what was queued, instead of buffered."""
        assert self.batcher is not None
        limit = settings.API_MAX_SOCKET_BACKLOG_BYTES
        self.batcher.reply(
            error_message(RateLimited(
                f"message: more than {limit} bytes of frames not yet stored on this socket "
                "(API_MAX_SOCKET_BACKLOG_BYTES); wait for the acks before sending more"
            )),
            close=CLOSE_TOO_MANY,
        )

    @classmethod
    async def decode_json(cls, text_data: str) -> Any:
        return json_decode(text_data, what="message")

    @classmethod
    async def encode_json(cls, content: Any) -> str:
        return orjson.dumps(content).decode()

    async def _admit(self, *, run_id: str, authorization: str | None) -> None:
        """Authenticate, check the run and the token's scope, take a socket slot."""
        caller = await database_sync_to_async(authenticate)(authorization=authorization)
        self.token = caller.token
        await database_sync_to_async(selectors.run_get)(run_id=run_id, token=self.token)
        key = ratelimit.token_key(self.token)  # type: ignore[arg-type]
        if not ratelimit.socket_acquire(key=key):
            limit = settings.API_MAX_SOCKETS_PER_TOKEN
            raise RateLimited(
                f"token: {limit} ingest sockets already open, at most {limit} "
                "(API_MAX_SOCKETS_PER_TOKEN); close one first"
            )
        self.slot_key = key
        self.token_checked_at = time.monotonic()

    async def _ingest(self, run_id: str, events: list[Any]) -> list[dict[str, Any]]:
        """Ingest a batch in this process's next group commit; ack each event."""
        result = await event_ingest_grouped(run_id=run_id, events=events, token=self.token)
        return [ack_message(ack) for ack in result.acks]

    async def _ingest_whole(self, run_id: str, events: Any) -> dict[str, Any]:
        """Ingest a batch frame in the next group commit; answer as the events POST does."""
        result = await event_ingest_grouped(run_id=run_id, events=events, token=self.token)
        return batch_ack_message(last_seq=result.last_seq, flips=result.flips, acks=result.acks)

    async def _token_revoked(self) -> bool:
        """Re-read the token at most every TOKEN_RECHECK_S: revoking it closes open sockets."""
        now = time.monotonic()
        if now - self.token_checked_at < TOKEN_RECHECK_S:
            return False
        self.token_checked_at = now
        token = self.token
        assert token is not None
        live = await token_reads.read(key=token.pk, read=lambda: api_token_is_live(token=token))
        return not live

    def _origin_allowed(self) -> bool:
        """Runtimes send no Origin; a browser page that does must be one of ours."""
        origin = _header(self.scope, b"origin")
        if origin is None:
            return True
        return OriginValidator(None, settings.ALLOWED_HOSTS).valid_origin(urlparse(origin))
