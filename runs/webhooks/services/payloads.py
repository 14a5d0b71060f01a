"""What a delivery says: the payload (built when the outbox row is written), its body in the
subscription's format (``standard`` JSON or a ``slack`` incoming-webhook text), and the
Standard Webhooks headers, signed with the ``standardwebhooks`` library."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any
from urllib.parse import quote

import orjson
from django.conf import settings
from standardwebhooks import Webhook

from runs.models import Run

TEXT_PREVIEW_CHARS = 300  # a warning's text in a payload


def message_id_new() -> str:
    """A delivery's webhook-id: the same on every attempt, so receivers de-duplicate."""
    return f"msg_{uuid.uuid4().hex}"


def run_url(run_id: str, seq: int | None = None) -> str:
    """The run page, at ``seq`` (time travel) when given."""
    url = f"{settings.WEBHOOKS_SITE_URL}/runs/{quote(run_id, safe='')}/"
    return f"{url}?at={seq}" if seq is not None else url


def run_payload(run: Run, *, event: str, seq: int | None, **data: Any) -> dict[str, Any]:
    """A run event's payload: which run (id, workflow, published version, enterprise), the
    event, its seq, a link to the run page at that seq, and the event's own fields."""
    return {
        "type": event,
        "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        "data": {
            "event": event,
            "run_id": run.pk,
            "workflow": run.workflow_name,
            "version": run.workflow_version,
            "enterprise_id": run.enterprise_id,
            "environment": run.environment,
            "seq": seq,
            "url": run_url(run.pk, seq),
            **data,
        },
    }


def version_payload(*, workflow_name: str, number: int, digest: str) -> dict[str, Any]:
    """``version_published``'s payload: the workflow, the version now published, its export."""
    export = f"{settings.WEBHOOKS_SITE_URL}/api/workflows/{quote(workflow_name, safe='')}"
    return {
        "type": "version_published",
        "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"),
        "data": {
            "event": "version_published",
            "workflow": workflow_name,
            "version": number,
            "digest": f"sha256:{digest}",
            "url": f"{export}/context_variables.json?version={number}",
        },
    }


def text_preview(value: Any) -> str:
    text = value if isinstance(value, str) else orjson.dumps(value).decode("utf-8")
    return text[:TEXT_PREVIEW_CHARS]


def value_capped(value: Any) -> tuple[Any, bool]:
    """A value from a run as a payload carries it, and whether it was cut: itself when its
    JSON is at most TEXT_PREVIEW_CHARS long, else the start of that JSON. A warning's refused
    value may be as large as an event (a megabyte), sent to every subscription, each retry;
    the run page has it whole."""
    text = orjson.dumps(value).decode("utf-8")
    if len(text) <= TEXT_PREVIEW_CHARS:
        return value, False
    return text[:TEXT_PREVIEW_CHARS], True


def slack_escaped(value: Any) -> str:
    """Run-provided text as Slack shows it, never as markup: ``<!channel>`` or
    ``<https://…|click>`` in an agent's name or a warning stays text (Slack's three escapes)."""
    text = value if isinstance(value, str) else str(value)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_text(payload: dict[str, Any]) -> str:
    """One line a person reads in Slack, with the link. Every value from a run is escaped;
    only the links built here (``WEBHOOKS_SITE_URL``, quoted ids) are markup."""
    data = payload["data"]
    event = data["event"]
    e = slack_escaped
    where = f"{e(data.get('workflow'))} run {e(data.get('run_id'))}" if data.get("run_id") else ""
    if event == "flag_flipped":
        value = orjson.dumps(data["value"]).decode()
        what = f"flag *{e(data['flag'])}* flipped to {e(value)}"
        cause = data.get("cause") or {}
        if cause:
            what += " (" + ", ".join(f"{e(k)}: {e(text_preview(v))}" for k, v in cause.items())
            what += ")"
    elif event == "handoff":
        what = f"hand-off {e(data.get('agent'))} → {e(data.get('target'))}"
    elif event == "run_started":
        what = f"started for {e(data.get('enterprise_id'))}"
    elif event == "run_ended":
        what = f"ended *{e(data.get('status'))}*"
    elif event == "run_stale":
        what = f"no event for {e(data.get('stale_after_s'))} s"
    elif event == "warning":
        what = f"warning: {e(data.get('text'))}"
    elif event == "test":
        return "contextadmin: a test event"
    elif event == "version_published":
        return f"{e(data['workflow'])}: version {e(data['version'])} published <{data['url']}>"
    else:
        what = e(event)
    return f"{where}: {what} <{data.get('url')}|open at #{e(data.get('seq'))}>"


def body_render(payload: dict[str, Any], *, format: str) -> bytes:
    """The request body in the subscription's format."""
    if format == "slack":
        return orjson.dumps({"text": slack_text(payload)})
    return orjson.dumps(payload)


def headers_signed(
    *, secrets: list[str], message_id: str, body: bytes, at: dt.datetime | None = None
) -> dict[str, str]:
    """The Standard Webhooks headers for one attempt (a new timestamp each time, same id):
    one signature per secret, space-separated, as the specification has it for rotation."""
    at = at or dt.datetime.now(dt.UTC)
    text = body.decode("utf-8")
    signature = " ".join(Webhook(secret).sign(message_id, at, text) for secret in secrets)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signature,
        "content-type": "application/json",
    }
