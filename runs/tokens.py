"""API tokens: create, authenticate (with a short-lived per-process cache), revoke, scope."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import threading
import time

from contextadmin_sdk.engine.format import API_TOKEN_PATTERN, text_problem
from django.db import transaction
from django.utils import timezone

from contextadmin.errors import BadRequest, Conflict, Forbidden
from contextadmin.models import Workflow
from runs.models import ApiToken

TOKEN_PREFIX = "ca_"  # noqa: S105  (a marker, not a secret)
TOKEN_PATTERN = re.compile(API_TOKEN_PATTERN)  # the engine's: a value of this shape is redacted
# A token read from the database is trusted this long by this process; a revocation made in
# another process takes effect within it (in this process, at once).
TOKEN_CACHE_S = 1.0
TOKEN_CACHE_MAX = 1024
LAST_USED_EVERY_S = 60.0  # last_used_at is written at most this often per token

_cache: dict[str, tuple[float, ApiToken]] = {}  # secret hash -> (read at, token)
_cache_lock = threading.Lock()


def _token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def api_token_create(*, name: str, workflow: Workflow | None = None) -> tuple[ApiToken, str]:
    """Create a token and return it with its secret, which is never stored and shown once."""
    name = name.strip()
    if not name:
        raise BadRequest("name: required")
    longest = ApiToken._meta.get_field("name").max_length
    if longest is not None and len(name) > longest:
        raise BadRequest(f"name: at most {longest} characters (got {len(name)})")
    if not name.isprintable():
        raise BadRequest("name: letters, digits, spaces and punctuation only (no control chars)")
    if ApiToken.objects.filter(name=name).exists():
        raise Conflict(f"name: a token named {name!r} already exists")
    prefix = secrets.token_hex(4)
    secret = f"{TOKEN_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    token = ApiToken.objects.create(
        name=name, prefix=prefix, secret_hash=_token_hash(secret), workflow=workflow
    )
    return token, secret


@transaction.atomic
def api_token_rotate(*, name: str) -> tuple[ApiToken, str]:
    """Replace the token named ``name`` (if any) with a new one, so a tool that needs a fresh
    secret (simulate_run's demo token) keeps one token rather than adding one per use."""
    ApiToken.objects.filter(name=name.strip()).delete()
    return api_token_create(name=name)


def api_token_authenticate(*, secret: str) -> ApiToken | None:
    """Return the live token for a presented secret (constant-time compare), else None."""
    match = TOKEN_PATTERN.fullmatch(secret or "")
    if match is None:
        return None
    presented = _token_hash(secret)
    now = time.monotonic()
    cached = _cache.get(presented)
    if cached is not None and now - cached[0] < TOKEN_CACHE_S:
        return cached[1]
    token = _token_read(prefix=match.group(1), presented=presented)
    with _cache_lock:
        if token is None:
            _cache.pop(presented, None)
        else:
            if len(_cache) >= TOKEN_CACHE_MAX:
                _cache.clear()
            _cache[presented] = (now, token)
    return token


def _token_read(*, prefix: str, presented: str) -> ApiToken | None:
    tokens = ApiToken.objects.filter(prefix=prefix, revoked=False).select_related("workflow")
    for token in tokens:
        if hmac.compare_digest(token.secret_hash, presented):
            now = timezone.now()
            if token.last_used_at is None or (
                (now - token.last_used_at).total_seconds() > LAST_USED_EVERY_S
            ):
                ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
                token.last_used_at = now
            return token
    return None


def api_token_is_live(*, token: ApiToken) -> bool:
    """Whether a token still works (not revoked, not deleted), read from the database."""
    return ApiToken.objects.filter(pk=token.pk, revoked=False).exists()


def api_token_get(*, name: str) -> ApiToken | None:
    """The token named ``name`` (revoked or not), or None (also for a name no database can
    hold: a command-line argument of non-UTF-8 bytes, as ``workflow_get``)."""
    if text_problem(name):
        return None
    return ApiToken.objects.filter(name=name.strip()).first()


def api_token_revoke(*, token: ApiToken) -> None:
    """Revoke a token: it stops working at once in this process, within TOKEN_CACHE_S in others."""
    ApiToken.objects.filter(pk=token.pk).update(revoked=True)
    with _cache_lock:
        for key in [key for key, (_, cached) in _cache.items() if cached.pk == token.pk]:
            del _cache[key]


def token_sees_workflow(*, token: ApiToken | None, workflow_name: str) -> bool:
    """Whether a token may act on ``workflow_name`` (a staff session, no token, may)."""
    return token is None or token.workflow_id is None or token.workflow.name == workflow_name


def token_check_workflow(*, token: ApiToken | None, workflow_name: str) -> None:
    """Refuse a token scoped to another workflow (a workflow it names: a run it names is
    looked up through ``selectors.run_get(token=)``, which answers a foreign run as unknown)."""
    if not token_sees_workflow(token=token, workflow_name=workflow_name):
        assert token is not None
        raise Forbidden(f"this token is scoped to workflow {token.workflow.name!r}")
