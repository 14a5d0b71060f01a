"""Websockets: runtimes ingest events; staff inspectors watch runs with gap-free resume.

An inspector gets a snapshot, then every later event in order. It joins the run's group
*before* reading the log, and drops anything at or below the last seq it sent, so events that
commit while the snapshot is read are neither lost nor duplicated. A group message whose seq
jumps ahead (the layer dropped one) makes it re-read the log from its last seq.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs

import orjson
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer, AsyncWebsocketConsumer
from django.conf import settings

from runs import selectors, services
from runs.api import bearer_secret
from runs.errors import ApiError
from runs.models import ApiToken

logger = logging.getLogger(__name__)

CATCH_UP_CHUNK = 500
CLOSE_FORBIDDEN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHORIZED = 4401


def _query(scope: dict[str, Any]) -> dict[str, str]:
    raw = scope.get("query_string", b"").decode("latin-1")
    return {key: values[-1] for key, values in parse_qs(raw).items()}


def _is_staff(scope: dict[str, Any]) -> bool:
    user = scope.get("user")
    return bool(user is not None and user.is_authenticated and user.is_staff)


class RunConsumer(AsyncWebsocketConsumer):
    """``/ws/runs/<run_id>/?after=<seq>``: snapshot, then every later event exactly once."""

    async def connect(self) -> None:
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

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Inspectors only listen; a ping gets a pong with the last seq (a liveness check)."""
        if text_data and len(text_data) < 200 and '"ping"' in text_data:
            await self.send(text_data=services.dumps({"type": "pong", "seq": self.last_seq}))

    async def run_events(self, message: dict[str, Any]) -> None:
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
            run = await database_sync_to_async(selectors.run_get)(run_id=self.run_id)
            services.token_check_workflow(token=self.token, workflow_name=run.workflow_name)
        except ApiError as exc:
            await self.accept()
            await self.send_json({"type": "error", **exc.as_dict()})
            await self.close(code=CLOSE_FORBIDDEN if exc.status == 403 else CLOSE_NOT_FOUND)
            return
        await self.accept()

    def _origin_allowed(self) -> bool:
        # Runtimes send no Origin; a browser page that does must be one of ours.
        from channels.security.websocket import OriginValidator

        for name, value in self.scope.get("headers", []):
            if name == b"origin":
                validator = OriginValidator(None, settings.ALLOWED_HOSTS)
                from urllib.parse import urlparse

                return validator.valid_origin(urlparse(value.decode("latin-1")))
        return True

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None:
            await self.send_json({"type": "error", "error": "message: send JSON text frames"})
            return
        try:
            event = orjson.loads(text_data)
        except orjson.JSONDecodeError as exc:
            await self.send_json({"type": "error", "error": f"message: not valid JSON ({exc})"})
            return
        try:
            result = await database_sync_to_async(services.event_ingest)(
                run_id=self.run_id, events=[event], token=self.token
            )
        except ApiError as exc:
            await self.send_json({"type": "error", "status": exc.status, **exc.as_dict()})
            return
        ack = result.acks[0]
        await self.send_json({"type": "ack", "seq": ack["seq"], "flips": ack["flips"]})

    async def encode_json(self, content: Any) -> str:  # type: ignore[override]
        return orjson.dumps(content).decode()
