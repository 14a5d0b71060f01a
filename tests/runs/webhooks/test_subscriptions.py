"""Subscriptions: bad input refused with the field named; the secret shown once."""

from __future__ import annotations

import datetime as dt
import io
import re
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from standardwebhooks import Webhook, WebhookVerificationError

from runs.webhooks.models import Subscription
from runs.webhooks.services.payloads import body_render, headers_signed
from runs.webhooks.services.subscriptions import (
    UrlRefused,
    secret_new,
    subscription_clean,
    subscription_create,
    subscription_secret_rotate,
    url_clean,
)


@pytest.mark.parametrize(
    ("url", "allow_http", "allow_private", "says"),
    [
        ("https://hooks.example.com/x", False, False, None),
        ("http://hooks.example.com/x", False, False, "must start with https://"),
        ("http://hooks.example.com/x", True, False, None),
        ("ftp://hooks.example.com/x", True, False, "must start with https:// or http://"),
        ("https://127.0.0.1/x", False, False, "loopback or private"),
        ("https://10.1.2.3/x", False, False, "loopback or private"),
        ("https://169.254.169.254/latest", False, False, "loopback or private"),
        ("https://[::1]/x", False, False, "loopback or private"),
        ("https://[::ffff:127.0.0.1]/x", False, False, "loopback or private"),
        ("https://localhost/x", False, False, "loopback or private"),
        # the legacy spellings of 127.0.0.1 that getaddrinfo reads, and a fully qualified name
        ("https://0x7f000001/x", False, False, "loopback or private"),
        ("https://2130706433/x", False, False, "loopback or private"),
        ("https://127.1/x", False, False, "loopback or private"),
        ("https://017700000001/x", False, False, "loopback or private"),
        ("https://0xa.1/x", False, False, "loopback or private"),
        ("https://localhost./x", False, False, "loopback or private"),
        ("https://hooks.localhost./x", False, False, "loopback or private"),
        ("https://hooks.example.com/x y", False, False, "must not contain spaces"),
        ("https://hooks.example.com/x\ty", False, False, "must not contain spaces"),
        ("https://hooks.example.com/x\x7f", False, False, "control characters"),
        ("https://hooks.example.com/a\u00a0b", False, False, "must not contain spaces"),
        ("https://bücher..example/x", False, False, "not a valid domain name"),
        ("https://127.0.0.1/x", False, True, None),
        ("https://user:pw@hooks.example.com/x", False, False, "user name or password"),
        ("https:///x", False, False, "has no host"),
        ("https://hooks.example.com:99999/x", False, False, "not a URL"),
        ("", False, False, "required"),
    ],
)
def test_url_rules(settings, url, allow_http, allow_private, says) -> None:
    settings.WEBHOOKS_ALLOW_HTTP = allow_http
    settings.WEBHOOKS_ALLOW_PRIVATE = allow_private
    if says is None:
        assert url_clean(url) == url
    else:
        with pytest.raises(UrlRefused, match=re.escape(says)):
            url_clean(url)


@pytest.mark.parametrize(
    ("url", "stored"),
    [
        ("https://bücher.example/ü?q=ñ", "https://xn--bcher-kva.example/%C3%BC?q=%C3%B1"),
        ("https://BÜCHER.example:8443/a%20b", "https://xn--bcher-kva.example:8443/a%20b"),
        ("  https://hooks.example.com/café  ", "https://hooks.example.com/caf%C3%A9"),
    ],
)
def test_a_non_ascii_url_is_stored_as_it_is_sent(url, stored) -> None:
    """Punycode for the host, UTF-8 percent-encoding for the rest: what a browser sends."""
    assert url_clean(url) == stored


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"events": "flag_flipped,nope"}, "events", "unknown event 'nope'"),
        ({"events": ""}, "events", "at least one of"),
        ({"events": "run_ended", "end_statuses": "done"}, "end_statuses", "unknown status 'done'"),
        ({"events": "run_ended", "format": "teams"}, "format", "unknown format 'teams'"),
        ({"events": "run_ended", "flags": 3}, "flags", "must be a list"),
    ],
)
def test_bad_fields_are_named(fields, field, says) -> None:
    with pytest.raises(ValidationError) as caught:
        subscription_clean(url="https://hooks.example.com/x", **fields)
    assert says in caught.value.message_dict[field][0]


def test_webhook_add_prints_the_secret_once_and_it_signs(generator) -> None:
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "webhook_add", "https://hooks.example.com/x", "--events", "flag_flipped,run_ended",
        "--flags", "interview_complete", stdout=out, stderr=err,
    )
    secret = out.getvalue().strip()
    assert secret.startswith("whsec_")
    subscription = Subscription.objects.get()
    assert subscription.secret == secret
    assert subscription.events == ["flag_flipped", "run_ended"]
    assert subscription.flags == ["interview_complete"]
    assert secret not in err.getvalue()
    signature = Webhook(secret).sign("msg_1", dt.datetime.now(dt.UTC), "{}")
    assert signature.startswith("v1,")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["https://hooks.example.com/x", "--events", "flag_flipped,bogus"], "events: unknown"),
        (["http://hooks.example.com/x", "--events", "flag_flipped"], "url: must start with"),
        (["https://hooks.example.com/x", "--events", "handoff", "--workflow", "Nope"], "workflow"),
        (["https://hooks.example.com/x", "--events", "handoff", "--format", "x"], "format:"),
        (
            ["https://hooks.example.com/x", "--events", "flag_flipped", "--flags", "Bad Flag!!"],
            "flags: no workflow has a derived flag named 'Bad Flag!!'",
        ),
        (
            ["https://hooks.example.com/x", "--events", "flag_flipped", "--flags", "nope"],
            "flags: no workflow has a derived flag named 'nope'",
        ),
        (["https://hooks.example.com/x y", "--events", "handoff"], "url: must not contain spaces"),
        (["https://0x7f000001/x", "--events", "handoff"], "url: 0x7f000001 is a loopback"),
        (["https://hooks.example.com/x", "--events", "handoff", "--end-statuses", "failed"],
         "end_statuses: only for run_ended, not among the events"),
    ],
)
def test_webhook_add_refuses_bad_input_and_stores_nothing(settings, args, says) -> None:
    settings.WEBHOOKS_ALLOW_HTTP = settings.WEBHOOKS_ALLOW_PRIVATE = False  # the defaults
    with pytest.raises(CommandError, match=says):
        call_command("webhook_add", *args, stdout=io.StringIO(), stderr=io.StringIO())
    assert not Subscription.objects.exists()


def test_flags_need_flag_flipped_and_are_kept_once(generator) -> None:
    add = ("webhook_add", "https://hooks.example.com/x", "--flags", "interview_complete")
    with pytest.raises(CommandError, match="flags: only for flag_flipped, not among the events"):
        call_command(*add, "--events", "run_ended", stdout=io.StringIO(), stderr=io.StringIO())
    assert not Subscription.objects.exists()
    call_command(
        *add[:2], "--events", "flag_flipped,run_ended", "--flags",
        "interview_complete,interview_complete", "--end-statuses", "failed,failed",
        stdout=io.StringIO(), stderr=io.StringIO(),
    )
    subscription = Subscription.objects.get()
    assert (subscription.flags, subscription.end_statuses) == (["interview_complete"], ["failed"])


@pytest.mark.django_db
def test_rotation_changes_the_secret() -> None:
    subscription, secret = subscription_create(url="https://h.example/x", events=["handoff"])
    new = subscription_secret_rotate(subscription=subscription)
    assert new != secret and new.startswith("whsec_")
    subscription.refresh_from_db()
    assert subscription.secret == new



def test_the_docs_five_line_receiver_verifies_a_signed_request() -> None:
    """docs/webhooks.md's receiver, run as written, against headers this server makes."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "webhooks.md").read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(block.strip().splitlines()) <= 5
    secret = secret_new()
    namespace: dict = {}
    exec(block.replace("whsec_…your secret…", secret), namespace)  # noqa: S102 (our docs)
    body = body_render({"type": "handoff", "data": {"event": "handoff"}}, format="standard")
    headers = headers_signed(secrets=[secret], message_id="msg_1", body=body)
    assert namespace["receive"](body, headers) == {"type": "handoff", "data": {"event": "handoff"}}
    with pytest.raises(WebhookVerificationError):
        namespace["receive"](body, {**headers, "webhook-id": "msg_2"})
