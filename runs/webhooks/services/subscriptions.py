"""Subscriptions: checked input (each error names its field), the secret, the active set.

The active set is cached per process for ``SUBSCRIPTIONS_CACHE_S`` (ingest reads it for every
batch) and dropped at once when this process saves or deletes a subscription; another
process's change is seen within that time.
"""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import secrets
import socket
import time
import unicodedata
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from contextadmin_sdk.engine import RUN_ENDED_STATUSES
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.encoding import iri_to_uri, punycode

from contextadmin import selectors
from contextadmin.models import Workflow
from runs.webhooks.models import EVENTS, FORMATS, Subscription

SUBSCRIPTIONS_CACHE_S = 1.0
URL_MAX_CHARS = 2000
SECRET_BYTES = 24
SECRET_OVERLAP = dt.timedelta(hours=24)  # a rotated secret still signs this long


def secret_new() -> str:
    """A Standard Webhooks signing secret: ``whsec_`` and base64 of random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


class UrlRefused(ValueError):
    """Why a URL may not receive webhooks (the message, without the field's name)."""


def url_clean(url: Any) -> str:
    """The URL as stored and sent, or ``UrlRefused``: the one URL rule, at save and at send.

    A non-ASCII host is stored in punycode and other non-ASCII percent-encoded (UTF-8), as a
    browser would send them; HTTP cannot carry them raw. Spaces and control characters are
    refused, not guessed at. Addresses behind a host name are checked at send time
    (``sending``), where they are resolved."""
    if not isinstance(url, str) or not url.strip():
        raise UrlRefused("required (an https:// URL)")
    url = url.strip()
    if len(url) > URL_MAX_CHARS:
        raise UrlRefused(f"at most {URL_MAX_CHARS} characters")
    if any(c.isspace() or unicodedata.category(c) == "Cc" for c in url):
        raise UrlRefused("must not contain spaces or control characters (write a space as %20)")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UrlRefused(f"not a URL: {exc}") from None
    if parts.scheme not in (("https", "http") if settings.WEBHOOKS_ALLOW_HTTP else ("https",)):
        raise UrlRefused(
            "must start with https://"
            + (" or http://" if settings.WEBHOOKS_ALLOW_HTTP else " (http:// only with "
               "WEBHOOKS_ALLOW_HTTP=1)")
        )
    host = parts.hostname
    if not host:
        raise UrlRefused("has no host")
    if parts.username or parts.password:
        raise UrlRefused("must not hold a user name or password")
    if port == 0:
        raise UrlRefused("port 0 is not a port")
    if not parts.netloc.isascii():
        try:
            host = punycode(host)
        except UnicodeError as exc:
            raise UrlRefused(f"host {host!r} is not a valid domain name ({exc})") from None
        parts = parts._replace(netloc=host if port is None else f"{host}:{port}")
    if not settings.WEBHOOKS_ALLOW_PRIVATE and host_private(host):
        raise UrlRefused(
            f"{host} is a loopback or private address (allowed with WEBHOOKS_ALLOW_PRIVATE=1)"
        )
    url = iri_to_uri(urlunsplit(parts))
    if len(url) > URL_MAX_CHARS:
        raise UrlRefused(f"at most {URL_MAX_CHARS} characters once percent-encoded")
    return url


def host_private(host: str) -> bool:
    """Whether a URL's host is, as written, localhost or a non-global address: in any
    spelling getaddrinfo reads as one (``127.1``, ``0x7f000001``, ``2130706433``, octal)."""
    name = host.rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(name)
    except ValueError:
        try:  # the legacy forms: inet_aton's reading, which getaddrinfo uses
            address = ipaddress.IPv4Address(socket.inet_aton(name))
        except (OSError, ValueError):
            return False
    return address_private(address)


# IPv6 ranges that carry an IPv4 address in their last 32 bits, which a translator or the
# kernel may connect to: IPv4-compatible (::a.b.c.d), SIIT (::ffff:0:a.b.c.d) and NAT64's
# well-known prefix (64:ff9b::a.b.c.d, RFC 6052). 64:ff9b:1::/48 (RFC 8215) is local by design.
_IPV4_IN_LAST_32_BITS = tuple(
    ipaddress.IPv6Network(net) for net in ("::/96", "::ffff:0:0:0/96", "64:ff9b::/96")
)
_IPV6_LOCAL_TRANSLATION = ipaddress.IPv6Network("64:ff9b:1::/48")


def address_private(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether a webhook may not reach ``address``: loopback, private, link-local and the like,
    also when written as an IPv6 address that carries one (mapped, 6to4, NAT64...)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in _IPV6_LOCAL_TRANSLATION:
            return True
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and any(address in net for net in _IPV4_IN_LAST_32_BITS):
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None and address_private(embedded):
            return True
        if address.ipv4_mapped is not None:
            return False  # a mapped global address is that address
    return not address.is_global or address.is_multicast


def _names(value: Any, field: str) -> list[str]:
    """A list of names from a list or a comma-separated string."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ValidationError({field: "must be a list of names"})
    return [v.strip() for v in value if v.strip()]


def _flags_problem(names: list[str], *, workflow: Workflow | None) -> str | None:
    """A flag_flipped filter names derived flags defined now: a typo would never fire."""
    if not names:
        return None
    defined = selectors.derived_flag_names(workflow=workflow)
    missing = [name[:80] for name in names if name not in defined]
    if not missing:
        return None
    if workflow is None:
        return f"no workflow has a derived flag named {missing[0]!r}"
    known = ", ".join(sorted(defined)[:20]) or "none"
    return f"{workflow.name} has no derived flag {missing[0]!r} (its flags: {known})"


def subscription_clean(
    *,
    url: Any,
    events: Any,
    flags: Any = None,
    end_statuses: Any = None,
    format: Any = "standard",
    workflow: Workflow | None = None,
) -> dict[str, Any]:
    """Check a subscription's fields; raise ``ValidationError`` naming each bad field."""
    errors: dict[str, str] = {}
    try:
        url = url_clean(url)
    except UrlRefused as exc:
        errors["url"] = str(exc)
    try:
        names = _names(events, "events")
        unknown = [name for name in names if name not in EVENTS]
        if unknown:
            errors["events"] = f"unknown event {unknown[0]!r} (one of {', '.join(EVENTS)})"
        elif not names:
            errors["events"] = f"at least one of {', '.join(EVENTS)}"
    except ValidationError as exc:
        errors.update({k: v[0] for k, v in exc.message_dict.items()})
        names = []
    try:
        flag_names = _names(flags, "flags")
        problem = _flags_problem(flag_names, workflow=workflow)
        if problem:
            errors["flags"] = problem
    except ValidationError as exc:
        errors.update({k: v[0] for k, v in exc.message_dict.items()})
        flag_names = []
    try:
        statuses = _names(end_statuses, "end_statuses")
        wrong = [s for s in statuses if s not in RUN_ENDED_STATUSES]
        if wrong:
            errors["end_statuses"] = (
                f"unknown status {wrong[0]!r} (one of {', '.join(RUN_ENDED_STATUSES)})"
            )
    except ValidationError as exc:
        errors.update({k: v[0] for k, v in exc.message_dict.items()})
        statuses = []
    if format not in FORMATS:
        errors["format"] = f"unknown format {format!r} (one of {', '.join(FORMATS)})"
    for field, chosen, event in (
        ("flags", flag_names, "flag_flipped"), ("end_statuses", statuses, "run_ended")
    ):
        if chosen and event not in names and field not in errors:
            errors[field] = f"only for {event}, not among the events: it could never match"
    if errors:
        raise ValidationError(errors)
    return {
        "url": url,
        "events": sorted(set(names), key=EVENTS.index),
        "flags": list(dict.fromkeys(flag_names)),  # each once, in the order given
        "end_statuses": list(dict.fromkeys(statuses)),
        "format": format,
    }


@transaction.atomic
def subscription_create(
    *,
    url: str,
    events: Iterable[str] | str,
    workflow: Workflow | None = None,
    flags: Iterable[str] | str | None = None,
    end_statuses: Iterable[str] | str | None = None,
    format: str = "standard",
    enabled: bool = True,
) -> tuple[Subscription, str]:
    """Create a subscription; return it and its signing secret (shown once, never again)."""
    fields = subscription_clean(
        workflow=workflow,
        url=url,
        events=list(events) if not isinstance(events, str) else events,
        flags=list(flags) if flags is not None and not isinstance(flags, str) else flags,
        end_statuses=(
            list(end_statuses)
            if end_statuses is not None and not isinstance(end_statuses, str)
            else end_statuses
        ),
        format=format,
    )
    secret = secret_new()
    subscription = Subscription.objects.create(
        **fields, workflow=workflow, enabled=enabled, secret=secret
    )
    return subscription, secret


def subscription_secret_rotate(*, subscription: Subscription, revoke: bool = False) -> str:
    """Give the subscription a new secret; return it (shown once). Sends from now on sign
    with it, retries of earlier deliveries included, and for SECRET_OVERLAP with the old one
    too, so a receiver updated any time within it never fails a delivery; ``revoke`` (a
    leaked secret) stops the old one at once."""
    secret = secret_new()
    fields = {
        "secret": secret,
        "previous_secret": "" if revoke else subscription.secret,
        "previous_secret_until": None if revoke else timezone.now() + SECRET_OVERLAP,
    }
    Subscription.objects.filter(pk=subscription.pk).update(**fields)
    for name, value in fields.items():
        setattr(subscription, name, value)
    return secret


# -- the active set, cached for ingest ---------------------------------------------------------
_cache: dict[str, Any] = {"at": -1e9, "subscriptions": ()}


def subscriptions_active() -> tuple[Subscription, ...]:
    """The enabled subscriptions (with their workflow's name), at most SUBSCRIPTIONS_CACHE_S old."""
    now = time.monotonic()
    if now - _cache["at"] > SUBSCRIPTIONS_CACHE_S:
        _cache["subscriptions"] = tuple(
            Subscription.objects.filter(enabled=True)
            .select_related("workflow")
            .defer("secret", "previous_secret")
        )
        _cache["at"] = now
    subscriptions: tuple[Subscription, ...] = _cache["subscriptions"]
    return subscriptions


def subscriptions_cache_clear(**kwargs: Any) -> None:
    """Forget the cached active set (this process saved or deleted a subscription)."""
    _cache["at"] = -1e9
