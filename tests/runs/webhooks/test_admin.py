"""The webhooks' admin: the secret once, fields named on bad input, the buttons, the
front page's warning."""

from __future__ import annotations

import io

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command
from django.urls import reverse

from contextadmin.models import Workflow
from contextadmin.services import workflow_import
from runs.services.ingest import event_ingest
from runs.services.lifecycle import run_start
from runs.webhooks.models import Delivery, Subscription
from runs.webhooks.services.subscriptions import subscription_create
from tests.support.demo import demo_events

pytestmark = pytest.mark.django_db
ADD = "admin:webhooks_subscription_add"


def _form(**fields) -> dict:
    return {
        "url": "https://hooks.example.com/x", "workflow": "", "events": ["flag_flipped"],
        "flags": "", "format": "standard", "enabled": "on", **fields,
    }


@pytest.fixture
def chat():
    """The demo chat workflow: three derived flags a flag_flipped filter may name."""
    path = django_settings.BASE_DIR / "contextadmin" / "demo" / "ag2_context_variables.json"
    workflow_import(name="GeneratorChat", data=path.read_bytes())
    return Workflow.objects.get(name="GeneratorChat")


def test_add_shows_the_secret_once(admin_client, chat) -> None:
    response = admin_client.post(reverse(ADD), _form(flags="interview_complete, context_saved"))
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    subscription = Subscription.objects.get()
    assert subscription.secret.startswith("whsec_")
    assert subscription.secret in response.content.decode()
    assert subscription.flags == ["interview_complete", "context_saved"]
    change = admin_client.get(reverse("admin:webhooks_subscription_change", args=[subscription.pk]))
    assert change.status_code == 200
    assert subscription.secret not in change.content.decode()


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"url": "http://hooks.example.com/x"}, "url", "must start with https://"),
        ({"url": "https://10.0.0.7/x"}, "url", "private"),
        ({"url": "https://2130706433/x"}, "url", "private"),
        ({"url": "https://localhost./x"}, "url", "private"),
        ({"url": "https://hooks.example.com/x y"}, "url", "must not contain spaces"),
        (
            {"events": ["run_ended"], "flags": "interview_complete"},
            "flags",
            "only for flag_flipped, not among the events",
        ),
        ({"events": ["nope"]}, "events", "nope"),
        ({"end_statuses": ["done"]}, "end_statuses", "done"),
        ({"flags": "Bad Flag!!"}, "flags", "no workflow has a derived flag named 'Bad Flag!!'"),
        ({"flags": "interview_complete, no_such_flag"}, "flags", "no workflow has a derived flag"),
        ({"flags": "product_tier"}, "flags", "no workflow has a derived flag named 'product_tier'"),
        (
            {"flags": "no_such_flag", "workflow": "CHAT"},
            "flags",
            "GeneratorChat has no derived flag 'no_such_flag' (its flags: context_saved, "
            "handoffs_reviewed, interview_complete)",
        ),
    ],
)
def test_bad_input_is_refused_with_the_field_named(
    admin_client, settings, chat, fields, field, says
) -> None:
    if fields.get("workflow") == "CHAT":
        fields = {**fields, "workflow": str(chat.pk)}
    settings.WEBHOOKS_ALLOW_HTTP = settings.WEBHOOKS_ALLOW_PRIVATE = False  # the defaults
    response = admin_client.post(reverse(ADD), _form(**fields))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert says in " ".join(errors[field])
    assert not Subscription.objects.exists()


def test_add_stores_the_url_as_it_is_sent_and_each_flag_once(admin_client, chat) -> None:
    form = _form(url="https://bücher.example/ü?q=ñ", flags="interview_complete, interview_complete")
    assert admin_client.post(reverse(ADD), form).status_code == 200
    subscription = Subscription.objects.get()
    assert subscription.url == "https://xn--bcher-kva.example/%C3%BC?q=%C3%B1"
    assert subscription.flags == ["interview_complete"]


def test_a_wrong_scheme_gets_one_message_in_the_admin_and_the_command(
    admin_client, settings
) -> None:
    settings.WEBHOOKS_ALLOW_HTTP = True
    response = admin_client.post(reverse(ADD), _form(url="ftp://hooks.example.com/x"))
    says = "must start with https:// or http://"
    assert response.context["adminform"].form.errors["url"] == [says]
    with pytest.raises(CommandError) as caught:
        call_command(
            "webhook_add", "ftp://hooks.example.com/x", "--events", "handoff",
            stdout=io.StringIO(), stderr=io.StringIO(),
        )
    assert str(caught.value) == f"url: {says}"
    assert not Subscription.objects.exists()


def test_a_single_label_host_is_accepted_by_the_admin_as_by_the_command(
    admin_client, settings
) -> None:
    """A receiver named by its service (``http://receiver:8080/hook`` in a compose network):
    the model's URLField validator refused it in the admin only ("Enter a valid URL.")."""
    settings.WEBHOOKS_ALLOW_HTTP = settings.WEBHOOKS_ALLOW_PRIVATE = True
    response = admin_client.post(reverse(ADD), _form(url="http://receiver:8080/hook"))
    assert response.status_code == 200, response.context["adminform"].form.errors
    call_command(
        "webhook_add", "http://receiver:8081/hook", "--events", "handoff",
        stdout=io.StringIO(), stderr=io.StringIO(),
    )
    assert sorted(Subscription.objects.values_list("url", flat=True)) == [
        "http://receiver:8080/hook", "http://receiver:8081/hook",
    ]


def test_the_test_rotate_and_redeliver_buttons(admin_client) -> None:
    subscription, secret = subscription_create(url="https://h.example/x", events=["handoff"])
    response = admin_client.post(reverse("admin:webhooks_test", args=[subscription.pk]))
    assert response.status_code == 302
    delivery = Delivery.objects.get()
    assert delivery.event == "test"
    Delivery.objects.filter(pk=delivery.pk).update(status="failed", attempts=3)
    page = admin_client.get(reverse("admin:webhooks_subscription_change", args=[subscription.pk]))
    assert delivery.message_id in page.content.decode()
    admin_client.post(reverse("admin:webhooks_redeliver", args=[delivery.pk]))
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("pending", 3)
    rotated = admin_client.post(reverse("admin:webhooks_rotate", args=[subscription.pk]))
    subscription.refresh_from_db()
    assert subscription.secret != secret
    assert subscription.secret in rotated.content.decode()
    rotate_url = reverse("admin:webhooks_rotate", args=[subscription.pk])
    assert admin_client.get(rotate_url).status_code == 405


def test_the_buttons_need_staff(client) -> None:
    subscription, _ = subscription_create(url="https://h.example/x", events=["handoff"])
    response = client.post(reverse("admin:webhooks_test", args=[subscription.pk]))
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert not Delivery.objects.exists()


def test_the_front_page_warns_of_a_switched_off_subscription(admin_client) -> None:
    subscription, _ = subscription_create(url="https://h.example/x", events=["handoff"])
    assert b"webhooks-off" not in admin_client.get("/").content
    Subscription.objects.filter(pk=subscription.pk).update(
        enabled=False, disabled_reason="switched off: every delivery failed for 5 days in a row"
    )
    page = admin_client.get("/").content.decode()
    assert 'id="webhooks-off"' in page and "failed for 5 days" in page


def test_a_test_event_or_redelivery_to_a_switched_off_subscription_says_it_waits(
    admin_client,
) -> None:
    subscription, _ = subscription_create(url="https://h.example/x", events=["handoff"])
    Subscription.objects.filter(pk=subscription.pk).update(
        enabled=False, disabled_reason="switched off: every delivery failed for 5 days in a row"
    )
    test_url = reverse("admin:webhooks_test", args=[subscription.pk])
    page = admin_client.post(test_url, follow=True).content.decode()
    assert "queued" in page and "switched off: nothing is sent to it until" in page
    delivery = Delivery.objects.get()
    redeliver_url = reverse("admin:webhooks_redeliver", args=[delivery.pk])
    page = admin_client.post(redeliver_url, follow=True).content.decode()
    assert "queued again. The subscription is switched off" in page


def test_a_delivery_held_back_by_an_earlier_one_says_so_and_links_its_run(
    admin_client, generator
) -> None:
    """Deliveries go in order per run: one waiting behind its run's earlier event said only
    "not sent yet", as if nothing were holding it; each row links the run page it is about."""
    subscription, _ = subscription_create(
        url="https://h.example/x", events=["run_started", "flag_flipped"]
    )
    run = run_start(workflow_name="Generator", enterprise_id="acme").run
    event_ingest(run_id=run.pk, events=demo_events()[:6])  # interview_complete flips at 5
    page = admin_client.get(
        reverse("admin:webhooks_subscription_change", args=[subscription.pk])
    ).content.decode()
    started, flipped = Delivery.objects.order_by("pk")
    row = page.split(f'data-message-id="{flipped.message_id}"')[1].split("</tr>")[0]
    assert "waiting for an earlier event of its run (sent in order)" in row
    assert f'href="{flipped.payload["data"]["url"]}">the run page</a>' in row
    head = page.split(f'data-message-id="{started.message_id}"')[1].split("</tr>")[0]
    assert "not sent yet" in head and "waiting for" not in head
