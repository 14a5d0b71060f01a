"""Who is calling: one ``authenticate`` for the HTTP API, the export and both websockets.

A runtime or pipeline presents an API token (``Authorization: Bearer <secret>``; the ingest
socket also takes ``?token=``), which takes one request from the token's rate budget. A browser
presents the Django session of a staff user, where the caller allows sessions.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from types import SimpleNamespace
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user

from contextadmin.errors import Forbidden, RateLimited, Unauthorized
from runs import ratelimit
from runs.models import ApiToken
from runs.tokens import api_token_authenticate


@dataclass(frozen=True)
class Caller:
    """A runtime with a token, or a staff user with a session."""

    token: ApiToken | None = None
    staff: bool = False


def bearer_secret(header: str | None) -> str | None:
    """Return the secret of an ``Authorization: Bearer <secret>`` header value."""
    if not header:
        return None
    scheme, _, secret = header.strip().partition(" ")
    return secret.strip() if scheme.lower() == "bearer" and secret.strip() else None


def authenticate(
    *, authorization: str | None, user: Any = None, session_allowed: bool = False
) -> Caller:
    """Return the caller, or raise Unauthorized (401), Forbidden (403) or RateLimited (429).

    A bearer token wins over a session. Where sessions are allowed, another scheme in
    ``Authorization`` (a proxy's, say) is left to the proxy and the session decides.
    """
    secret = bearer_secret(authorization)
    if secret is not None or (authorization and not session_allowed):
        if secret is None:  # another scheme (Basic, a bare token) where only Bearer counts
            raise Unauthorized("Authorization: expected `Bearer <token>`")
        token = api_token_authenticate(secret=secret)
        if token is None:
            raise Unauthorized("Authorization: invalid or revoked token")
        token_rate_check(token=token)
        return Caller(token=token)
    if session_allowed and user is not None and user.is_authenticated:
        if not user.is_staff:
            raise Forbidden("session: staff access required")
        return Caller(staff=True)
    if session_allowed:
        raise Unauthorized("authentication required: a Bearer token, or log in as a staff user")
    raise Unauthorized("Authorization: a Bearer token is required")


def staff_session_check(*, session_key: str | None) -> Caller:
    """Re-read a session and its user now (an open inspector socket's, every second): raise
    Unauthorized when the session is gone (logged out, deleted, expired, flushed) or its user
    is inactive or changed their password, Forbidden when the user is no longer staff.

    The same reads as a new request's (``django.contrib.auth.get_user``: the session's user,
    the backend's ``user_can_authenticate``, the password hash the session was made with).
    """
    store = import_module(settings.SESSION_ENGINE).SessionStore(session_key)
    user = get_user(SimpleNamespace(session=store))  # type: ignore[arg-type]
    return authenticate(authorization=None, user=user, session_allowed=True)


def token_rate_check(*, token: ApiToken) -> None:
    """Take one request from the token's bucket; raise RateLimited (429) when it is empty."""
    decision = ratelimit.request_allow(key=ratelimit.token_key(token))
    if not decision.allowed:
        raise RateLimited(
            f"token: over its rate limit of {decision.limit} requests a minute "
            f"(API_RATE_LIMIT_PER_MINUTE); retry after {decision.retry_after}s",
            retry_after=decision.retry_after,
        )
