"""Versions (issue 16): every save, import and revert is one numbered version; stale edits are
refused; with review on a save is a draft until another staff user approves it."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest
import reversion
from contextadmin_sdk.engine import format as fmt
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from reversion.models import Version

from contextadmin import selectors, services
from contextadmin.models import Trigger, Variable, VersionAction, Workflow, WorkflowVersion
from tests.contextadmin.conftest import db_dump
from tests.contextadmin.formdata import form_data

pytestmark = pytest.mark.django_db


def change_url(workflow: Workflow) -> str:
    return reverse("admin:contextadmin_workflow_change", args=[workflow.pk])


def history_url(workflow: Workflow) -> str:
    return reverse("admin:contextadmin_workflow_history", args=[workflow.pk])


def page_data(client: Client, workflow: Workflow) -> dict[str, Any]:
    response = client.get(change_url(workflow))
    assert response.status_code == 200
    data = form_data(response.content.decode())
    data["_continue"] = "Save and continue editing"
    return data


def field(data: dict[str, Any], category: str, name: str, key: str) -> str:
    """Return the post key of one field of the variable called ``name``."""
    for post_key, value in data.items():
        if post_key.startswith(category) and post_key.endswith("-name") and value == name:
            return post_key.removesuffix("name") + key
    raise KeyError(name)


def other_staff(username: str = "reviewer") -> Any:
    return get_user_model().objects.create_superuser(username, f"{username}@example.com", "pw-pw-1")


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def versions(workflow: Workflow) -> list[tuple[int, str, str]]:
    return [
        (v.number, v.action, v.author_name)
        for v in WorkflowVersion.objects.filter(workflow=workflow).order_by("number")
    ]


# -- versions are recorded ----------------------------------------------------------------------
def test_import_is_version_one_with_a_revision_of_every_row(generator: Workflow) -> None:
    version = WorkflowVersion.objects.get(workflow=generator)
    assert (version.number, version.action, version.who) == (1, "import", "command line")
    assert generator.published_version_id == version.pk
    assert version.export.encode() == selectors.workflow_export(workflow=generator)
    assert version.export_production.encode() == selectors.workflow_export(
        workflow=generator, environment="production"
    )
    # One reversion revision: the workflow, its variables, hand-offs and (grand-child) triggers.
    stored = Version.objects.filter(revision=version.revision)
    models = sorted({v.content_type.model for v in stored})
    assert models == ["trigger", "variable", "workflow"]
    assert stored.filter(content_type__model="variable").count() == Variable.objects.count()
    assert stored.filter(content_type__model="trigger").count() == Trigger.objects.count()


def test_admin_save_records_a_published_version_with_author_and_note(
    staff_client: Client, generator: Workflow
) -> None:
    data = page_data(staff_client, generator)
    data[field(data, "declarative", "max_items", "value")] = "30"
    data["version_comment"] = "raise the cap"
    response = staff_client.post(change_url(generator), data)
    assert response.status_code == 302
    latest = WorkflowVersion.objects.get(workflow=generator, number=2)
    assert (latest.action, latest.author_name, latest.comment) == (
        "save",
        "operator",
        "raise the cap",
    )
    generator.refresh_from_db()
    assert generator.published_version_id == latest.pk
    assert json.loads(latest.export)["context_variables"]["declarative_variables"][1]["value"] == 30
    messages = [str(m) for m in response.wsgi_request._messages]
    assert "Saved as version 2, published." in messages


def test_a_save_without_changes_records_no_version(
    staff_client: Client, generator: Workflow
) -> None:
    response = staff_client.post(change_url(generator), page_data(staff_client, generator))
    assert response.status_code == 302
    assert versions(generator) == [(1, "import", "")]


def test_a_revision_follows_handoffs(db: None, example: dict[str, Any]) -> None:
    example["handoffs"] = [
        {
            "source_agent": "InterviewAgent",
            "target_agent": "PlannerAgent",
            "condition": "${interview_complete}",
            "description": "",
        }
    ]
    result = services.workflow_import(name="Flow", data=json.dumps(example))
    assert result.version is not None
    kinds = {v.content_type.model for v in Version.objects.filter(revision=result.version.revision)}
    assert "handoff" in kinds
    assert reversion.is_registered(Workflow)


# -- no lost update -----------------------------------------------------------------------------
def test_a_stale_save_is_refused_with_who_when_and_the_diff_and_keeps_both_edits(
    staff_client: Client, generator: Workflow
) -> None:
    colleague = other_staff("colleague")
    tab_a = page_data(client_for(colleague), generator)
    tab_b = page_data(staff_client, generator)  # opened before tab A saves

    tab_a[field(tab_a, "declarative", "max_items", "value")] = "30"
    assert client_for(colleague).post(change_url(generator), tab_a).status_code == 302

    tab_b[field(tab_b, "declarative", "product_tier", "value")] = "ga"
    response = staff_client.post(change_url(generator), tab_b)

    assert response.status_code == 200
    html = response.content.decode()
    assert "version 2 was saved by colleague at" in html
    assert 'id="stale-diff"' in html
    assert "declarative variable max_items" in html and "value 25 → 30" in html
    assert "The page now holds their changes and your edits" in html
    # What tab B typed is still on the page, beside tab A's change to a field B left alone;
    # the stored definitions are tab A's.
    again = form_data(html)
    assert again[field(again, "declarative", "product_tier", "value")] == "ga"
    assert again[field(again, "declarative", "max_items", "value")] == "30"
    assert again["base_version"] == "2"
    stored = json.loads(selectors.workflow_export(workflow=generator))
    assert [v["value"] for v in stored["context_variables"]["declarative_variables"]] == [
        "beta",
        30,
    ]
    # Having seen the diff, tab B saves again: both edits are kept (none undone unseen).
    again["_continue"] = "Save and continue editing"
    assert staff_client.post(change_url(generator), again).status_code == 302
    stored = json.loads(selectors.workflow_export(workflow=generator))
    assert [v["value"] for v in stored["context_variables"]["declarative_variables"]] == [
        "ga",
        30,
    ]
    assert versions(generator)[-2:] == [(2, "save", "colleague"), (3, "save", "operator")]


@pytest.mark.parametrize("row_id", ["1" * 30, "abc", "0"])
def test_a_stale_page_with_a_row_id_that_names_no_row_is_refused_and_says_so(
    staff_client: Client, generator: Workflow, row_id: str
) -> None:
    """The merge reads the posted rows by id: an id past the database's integers was a 500."""
    colleague = other_staff("colleague")
    tab_a = page_data(client_for(colleague), generator)
    tab_b = page_data(staff_client, generator)
    tab_a[field(tab_a, "declarative", "max_items", "value")] = "30"
    assert client_for(colleague).post(change_url(generator), tab_a).status_code == 302
    before = db_dump()

    tab_b["declarative_variables-0-id"] = row_id
    response = staff_client.post(change_url(generator), tab_b)

    assert response.status_code == 200
    html = response.content.decode()
    assert "version 2 was saved by colleague at" in html
    assert "row 1 (product_tier): its id is not a stored row of this list" in html
    assert db_dump() == before


def test_after_a_stale_refusal_a_field_both_changed_keeps_the_pages_value_and_others_merge(
    staff_client: Client, generator: Workflow
) -> None:
    """Where both operators changed the same field the page's user wins (they see the diff);
    every other change of the other save, a checkbox and a description included, is kept."""
    colleague = other_staff("colleague")
    tab_a = page_data(client_for(colleague), generator)
    tab_b = page_data(staff_client, generator)
    trim = next(key for key in tab_a if key.endswith("-triggers-0-trim"))
    described = field(tab_a, "declarative", "product_tier", "description")
    tab_a[field(tab_a, "declarative", "max_items", "value")] = "30"
    tab_a[described] = "their note"
    del tab_a[trim]  # trim unticked
    assert client_for(colleague).post(change_url(generator), tab_a).status_code == 302

    tab_b[field(tab_b, "declarative", "max_items", "value")] = "40"  # both changed it
    refused = staff_client.post(change_url(generator), tab_b)
    assert refused.status_code == 200
    again = form_data(refused.content.decode())
    assert again[field(again, "declarative", "max_items", "value")] == "40"
    assert again[described] == "their note"
    assert trim not in again  # unticked, as tab A left it
    again["_continue"] = "Save and continue editing"
    assert staff_client.post(change_url(generator), again).status_code == 302

    stored = json.loads(selectors.workflow_export(workflow=generator))
    declared = stored["context_variables"]["declarative_variables"]
    assert [v["value"] for v in declared] == ["beta", 40]
    assert declared[0]["description"] == "their note"
    match = stored["context_variables"]["derived_variables"][0]["triggers"][0]["match"]
    assert match.get("trim") is False


def test_an_import_counts_as_a_save_for_a_page_opened_before_it(
    staff_client: Client, generator: Workflow, example: dict[str, Any]
) -> None:
    tab = page_data(staff_client, generator)
    example["context_variables"]["declarative_variables"][0]["value"] = "imported"
    services.workflow_import(name="Generator", data=json.dumps(example), replace=True)
    tab[field(tab, "declarative", "max_items", "value")] = "31"
    response = staff_client.post(change_url(generator), tab)
    assert response.status_code == 200
    assert "was imported by command line" in response.content.decode()
    assert versions(generator)[-1] == (2, "import", "")


def test_an_import_preview_made_before_a_save_is_not_applied(
    staff_client: Client, generator: Workflow, example: dict[str, Any]
) -> None:
    import_url = reverse("admin:contextadmin_workflow_import_into", args=[generator.pk])
    changed = copy.deepcopy(example)
    changed["context_variables"]["declarative_variables"][0]["value"] = "ga"
    preview = staff_client.post(
        import_url,
        {"step": "upload", "name": "Generator", "file": _upload(json.dumps(changed).encode())},
    )
    assert preview.status_code == 200 and preview.context["token"]
    # Someone saves the workflow page between the preview and the apply.
    data = page_data(client_for(other_staff()), generator)
    data[field(data, "declarative", "max_items", "value")] = "40"
    assert (
        client_for(get_user_model().objects.get(username="reviewer"))
        .post(change_url(generator), data)
        .status_code
        == 302
    )

    response = staff_client.post(import_url, {"step": "apply", "token": preview.context["token"]})

    assert response.status_code == 200
    html = response.content.decode()
    assert "Not imported: the workflow changed since the preview" in html
    assert "Version 2 was saved by reviewer at" in html
    assert "value 25 → 40" in html  # what the save changed
    assert response.context["token"]  # a fresh preview, to apply after reading the diff
    assert versions(generator)[-1] == (2, "save", "reviewer")


def test_import_with_a_stale_base_raises(
    generator: Workflow, example_bytes: bytes, example: dict[str, Any]
) -> None:
    example["context_variables"]["declarative_variables"][1]["value"] = 50
    services.workflow_import(name="Generator", data=json.dumps(example), replace=True, base=1)
    with pytest.raises(services.StaleEdit) as caught:
        services.workflow_import(name="Generator", data=example_bytes, replace=True, base=1)
    assert caught.value.current.number == 2
    assert "version 2 was imported by command line" in str(caught.value)


# -- history, diff, revert ----------------------------------------------------------------------
def test_history_page_lists_versions_and_diffs_any_two(
    staff_client: Client, generator: Workflow, example: dict[str, Any]
) -> None:
    example["context_variables"]["declarative_variables"][1]["value"] = 50
    services.workflow_import(
        name="Generator", data=json.dumps(example), replace=True, comment="cap 50"
    )
    response = staff_client.get(history_url(generator))
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="version-1"' in html and 'id="version-2"' in html
    assert "Version 1 → version 2: 0 added, 0 removed, 1 changed" in html
    assert "value 25 → 50" in html and "cap 50" in html

    response = staff_client.get(history_url(generator) + "?from=2&to=1")
    assert "value 50 → 25" in response.content.decode()


def test_revert_is_a_new_version_with_the_old_definitions(
    staff_client: Client, generator: Workflow, example: dict[str, Any]
) -> None:
    original = selectors.workflow_export(workflow=generator)
    example["context_variables"]["declarative_variables"][1]["value"] = 50
    services.workflow_import(name="Generator", data=json.dumps(example), replace=True)

    url = reverse("admin:contextadmin_workflow_revert", args=[generator.pk, 1])
    response = staff_client.post(url, {"base_version": "2"})

    assert response.status_code == 302 and response["Location"].endswith("?to=3")
    assert selectors.workflow_export(workflow=generator) == original
    latest = WorkflowVersion.objects.get(workflow=generator, number=3)
    assert (latest.action, latest.reverted_from, latest.author_name) == ("revert", 1, "operator")
    # A revert from a stale History page is refused like a stale save.
    response = staff_client.post(url, {"base_version": "2"}, follow=True)
    assert "version 3 was reverted by operator" in response.content.decode()
    assert WorkflowVersion.objects.filter(workflow=generator).count() == 3


def test_revert_needs_post_and_change_permission(client: Client, generator: Workflow) -> None:
    viewer = get_user_model().objects.create_user("viewer", password="pw", is_staff=True)
    client.force_login(viewer)
    url = reverse("admin:contextadmin_workflow_revert", args=[generator.pk, 1])
    assert client.post(url, {"base_version": "1"}).status_code == 403


# -- review -------------------------------------------------------------------------------------
@pytest.fixture
def review_on(settings: Any, generator: Workflow) -> None:
    """Review turned on after the generator's version 1 was published."""
    settings.CONTEXTADMIN_REVIEW = "on"


def test_with_review_a_save_is_a_draft_that_pipelines_do_not_get(
    review_on: None, staff_client: Client, generator: Workflow
) -> None:
    published = selectors.workflow_export_version(workflow=generator)
    data = page_data(staff_client, generator)
    data[field(data, "declarative", "max_items", "value")] = "30"
    response = staff_client.post(change_url(generator), data)
    assert response.status_code == 302
    messages = [str(m) for m in response.wsgi_request._messages]
    assert any("Saved as version 2, a draft" in m for m in messages)

    generator.refresh_from_db()
    served = selectors.workflow_export_version(workflow=generator)
    assert (served.number, served.status, served.body) == (1, "published", published.body)
    assert served.etag == published.etag  # a pipeline's If-None-Match poll stays 304
    draft = selectors.workflow_export_version(workflow=generator, version="draft")
    assert (draft.number, draft.status) == (2, "draft")
    assert json.loads(draft.body)["context_variables"]["declarative_variables"][1]["value"] == 30
    assert selectors.workflow_export_version(workflow=generator, version=2).body == draft.body


def test_a_shell_without_review_cannot_import_over_a_draft_awaiting_review(
    settings: Any, staff_client: Client, generator: Workflow, example_bytes: bytes, tmp_path: Any
) -> None:
    """The server runs with review on; a ``manage.py import_context`` from a shell that lacks
    the setting published version 3 over the unreviewed draft 2."""
    settings.CONTEXTADMIN_REVIEW = "on"
    data = page_data(staff_client, generator)
    data[field(data, "declarative", "max_items", "value")] = "30"
    assert staff_client.post(change_url(generator), data).status_code == 302  # draft 2
    settings.CONTEXTADMIN_REVIEW = "off"  # the shell's process
    path = tmp_path / "context_variables.json"
    path.write_bytes(example_bytes)
    before = db_dump()

    with pytest.raises(CommandError, match=(
        r"version 2 of Generator is a draft awaiting review, and this process has "
        r"CONTEXTADMIN_REVIEW off: .*CONTEXTADMIN_REVIEW=on"
    )):
        call_command("import_context", str(path), "--workflow", "Generator", "--replace")
    assert db_dump() == before
    generator.refresh_from_db()
    assert generator.published_version.number == 1
    with pytest.raises(CommandError, match="dry run: the import would be refused"):
        call_command(  # it shows the diff, and fails as the import would (a CI gate)
            "import_context", str(path), "--workflow", "Generator", "--replace", "--dry-run",
            stdout=io.StringIO(),
        )
    settings.CONTEXTADMIN_REVIEW = "on"  # with the server's settings: a draft, as in the admin
    out = io.StringIO()
    call_command("import_context", str(path), "--workflow", "Generator", "--replace", stdout=out)
    assert "version 3, a draft awaiting review" in out.getvalue()


def test_the_author_cannot_approve_their_own_draft(
    review_on: None, staff: Any, staff_client: Client, generator: Workflow, example: dict
) -> None:
    example["context_variables"]["declarative_variables"][1]["value"] = 50
    services.workflow_import(name="Generator", data=json.dumps(example), replace=True, user=staff)
    page = staff_client.get(history_url(generator)).content.decode()
    assert "You wrote this draft: a different staff user must approve it." in page
    url = reverse("admin:contextadmin_workflow_approve", args=[generator.pk, 2])
    response = staff_client.post(url, {"base_version": "2"}, follow=True)
    assert "you cannot approve your own draft" in response.content.decode()
    generator.refresh_from_db()
    assert selectors.workflow_export_version(workflow=generator).number == 1


def test_a_draft_that_breaks_the_format_cannot_be_approved(
    review_on: None, staff: Any, generator: Workflow
) -> None:
    """Rows saved before a rule existed can record a draft no run could start from: approving
    it is refused, saying why, and the published version stays."""
    Trigger.objects.filter(variable__workflow=generator).update(agent="")  # agent_text: required
    draft = services.workflow_version_record(workflow=generator, user=staff)
    assert draft is not None and draft.number == 2
    reviewer = client_for(other_staff())
    url = reverse("admin:contextadmin_workflow_approve", args=[generator.pk, 2])
    response = reviewer.post(url, {"base_version": "2"}, follow=True)
    page = response.content.decode()
    assert "version 2 breaks the format" in page and "agent" in page
    generator.refresh_from_db()
    assert selectors.workflow_export_version(workflow=generator).number == 1
    assert WorkflowVersion.objects.get(workflow=generator, number=2).approved_at is None


@pytest.mark.parametrize("base", [None, "", "x", "\u0662"], ids=["absent", "empty", "x", "digit-2"])
@pytest.mark.parametrize("action", ["revert", "approve"])
def test_a_version_action_without_the_version_the_page_showed_changes_nothing(
    review_on: None, staff: Any, generator: Workflow, example: dict, action: str,
    base: str | None,
) -> None:
    """A forged ``base_version=x`` skipped the stale-page check (last writer wins)."""
    example["context_variables"]["declarative_variables"][1]["value"] = 50
    services.workflow_import(name="Generator", data=json.dumps(example), replace=True, user=staff)
    reviewer = client_for(other_staff())
    number = 1 if action == "revert" else 2
    url = reverse(f"admin:contextadmin_workflow_{action}", args=[generator.pk, number])
    before = db_dump()
    response = reviewer.post(url, {} if base is None else {"base_version": base}, follow=True)
    page = response.content.decode()
    verb = "reverted" if action == "revert" else "approved"
    assert f"Not {verb}: the request did not say which version the page showed" in page
    assert db_dump() == before


def test_another_staff_user_approves_and_that_publishes(
    review_on: None, staff: Any, generator: Workflow, example: dict
) -> None:
    before = selectors.workflow_export_version(workflow=generator)
    example["context_variables"]["declarative_variables"][1]["value"] = 50
    services.workflow_import(name="Generator", data=json.dumps(example), replace=True, user=staff)
    reviewer = client_for(other_staff())
    page = reviewer.get(history_url(generator)).content.decode()
    assert "Approve and publish version 2" in page

    url = reverse("admin:contextadmin_workflow_approve", args=[generator.pk, 2])
    response = reviewer.post(url, {"base_version": "2", "comment": "looks right"})

    assert response.status_code == 302
    generator.refresh_from_db()
    served = selectors.workflow_export_version(workflow=generator)
    assert (served.number, served.status) == (2, "published")
    assert served.etag != before.etag
    version = WorkflowVersion.objects.get(workflow=generator, number=2)
    assert (version.approved_by_name, version.approval_comment) == ("reviewer", "looks right")
    changes = reviewer.get(reverse("admin:contextadmin_workflowversion_changelist"))
    assert "approved by reviewer" in changes.content.decode()


def test_an_edit_after_the_reviewer_opened_the_draft_withdraws_it(
    review_on: None, staff: Any, generator: Workflow, example: dict
) -> None:
    example["context_variables"]["declarative_variables"][1]["value"] = 50
    services.workflow_import(name="Generator", data=json.dumps(example), replace=True, user=staff)
    reviewer = client_for(other_staff())
    reviewer.get(history_url(generator))  # the reviewer reads draft 2 ...
    example["context_variables"]["declarative_variables"][1]["value"] = 5000
    services.workflow_import(name="Generator", data=json.dumps(example), replace=True, user=staff)
    # ... and approves what they read: refused, version 3 is what would be published.
    url = reverse("admin:contextadmin_workflow_approve", args=[generator.pk, 2])
    response = reviewer.post(url, {"base_version": "2"}, follow=True)
    assert "Not approved" in response.content.decode()
    generator.refresh_from_db()
    assert selectors.workflow_export_version(workflow=generator).number == 1
    with pytest.raises(services.ReviewRefused, match="not the newest"):
        services.workflow_version_approve(
            workflow=generator, number=2, user=get_user_model().objects.get(username="reviewer")
        )
    for missing in (99, 0):  # it said "version 99 is not the newest version"
        with pytest.raises(
            services.ReviewRefused, match=rf"^Generator has no version {missing} \(its newest"
        ):
            services.workflow_version_approve(
                workflow=generator, number=missing, user=get_user_model().objects.get(
                    username="reviewer")
            )


def test_a_revert_goes_through_review(
    review_on: None, staff: Any, generator: Workflow, example: dict
) -> None:
    example["context_variables"]["declarative_variables"][1]["value"] = 50
    services.workflow_import(name="Generator", data=json.dumps(example), replace=True, user=staff)
    reviewer = other_staff()
    services.workflow_version_approve(workflow=generator, number=2, user=reviewer)
    version = services.workflow_version_revert(workflow=generator, number=1, user=staff, base=2)
    generator.refresh_from_db()
    assert version.number == 3
    assert selectors.workflow_export_version(workflow=generator).number == 2
    assert selectors.workflow_export_version(workflow=generator, version="draft").number == 3


# -- selectors and commands ---------------------------------------------------------------------
def test_export_version_errors_name_the_field(generator: Workflow) -> None:
    with pytest.raises(selectors.VersionNotFound, match=r"^version: Generator has no version 9"):
        selectors.workflow_export_version(workflow=generator, version=9)
    with pytest.raises(selectors.UnknownEnvironment):
        selectors.workflow_export_version(workflow=generator, environment="staging")
    with pytest.raises(selectors.VersionNotFound, match=r"^version: expected"):
        selectors.version_parse("latest")
    assert selectors.version_parse("") is None
    assert selectors.version_parse("draft") == "draft"
    assert selectors.version_parse("12") == 12


def test_a_workflow_without_versions_is_served_from_its_rows(db: None) -> None:
    workflow = Workflow.objects.create(name="Bare")
    served = selectors.workflow_export_version(workflow=workflow)
    assert served.number is None and served.status == "unversioned"
    assert served.body == fmt.export_with_version(
        selectors.workflow_export(workflow=workflow), number=None
    )


def test_published_config_is_what_a_run_pins(review_on: None, generator: Workflow) -> None:
    config, number = selectors.workflow_published_config(workflow=generator)
    assert number == 1
    assert config.context_variables.declarative_variables[1].value == 25


def test_export_context_version_option(
    generator: Workflow, example: dict, capsys: pytest.CaptureFixture[str]
) -> None:
    example["context_variables"]["declarative_variables"][1]["value"] = 50
    services.workflow_import(name="Generator", data=json.dumps(example), replace=True)
    call_command("export_context", "Generator", "--version", "1")
    out, err = capsys.readouterr()
    assert json.loads(out)["context_variables"]["declarative_variables"][1]["value"] == 25
    assert "Generator version 1 (superseded)" in err
    call_command("export_context", "Generator")
    out, err = capsys.readouterr()
    assert json.loads(out)["context_variables"]["declarative_variables"][1]["value"] == 50
    assert "version 2 (published)" in err


# -- query counts -------------------------------------------------------------------------------
def _workflow_of(size: int, name: str) -> Workflow:
    document = {
        "context_variables": {
            "declarative_variables": [
                {"name": f"v_{i}", "type": "integer", "description": "", "value": i}
                for i in range(size)
            ],
            "derived_variables": [
                {
                    "name": f"d_{i}",
                    "type": "boolean",
                    "description": "",
                    "triggers": [{"type": "agent_turn_count", "agent": "A", "count": 2}],
                }
                for i in range(size)
            ],
        }
    }
    services.workflow_import(name=name, data=json.dumps(document))
    document["context_variables"]["declarative_variables"][0]["value"] = 99
    services.workflow_import(name=name, data=json.dumps(document), replace=True)
    return Workflow.objects.get(name=name)


def _queries(action: Any) -> int:
    with CaptureQueriesContext(connection) as captured:
        action()
    return len(captured.captured_queries)


@pytest.mark.parametrize(
    ("query", "says", "diff"),
    [
        ("?to=99", "The link&#x27;s to=99 names no version (versions 1 to 2): showing version 2",
         "Version 1 → version 2"),
        ("?from=abc", "from=abc names no version (versions 1 to 2): showing version 1",
         "Version 1 → version 2"),
        ("?to=1&from=0", "from=0 names no version (versions 1 to 2): showing nothing",
         "version 1"),
        ("?to=%D9%A1", "to=\u0661 names no version", "Version 1 → version 2"),
    ],
)
def test_history_says_when_a_link_names_no_version_and_what_it_shows(
    staff_client: Client, generator: Workflow, example: dict[str, Any], query: str, says: str,
    diff: str,
) -> None:
    """``?to=99`` and ``?from=abc`` were ignored without a word."""
    example["context_variables"]["declarative_variables"][1]["value"] = 50
    services.workflow_import(name="Generator", data=json.dumps(example), replace=True)
    response = staff_client.get(history_url(generator) + query)
    assert response.status_code == 200
    html = response.content.decode()
    assert says in html and diff in html


def test_history_page_and_export_by_version_take_constant_queries(
    staff_client: Client,
) -> None:
    small, large = _workflow_of(2, "Small"), _workflow_of(150, "Large")
    counts = {}
    for workflow in (small, large):
        staff_client.get(history_url(workflow))  # warm the session and content types
        counts[workflow.name] = (
            _queries(lambda w=workflow: staff_client.get(history_url(w))),
            _queries(lambda w=workflow: staff_client.get(history_url(w) + "?from=1&to=2")),
            _queries(
                lambda w=workflow: selectors.workflow_export_version(
                    workflow=w, version=1, environment="production"
                )
            ),
            _queries(lambda w=workflow: selectors.workflow_export_version(workflow=w)),
        )
    assert counts["Small"] == counts["Large"]
    assert counts["Large"][2] == 1 and counts["Large"][3] == 1
    assert counts["Large"][0] <= 12


def test_recent_changes_lists_imports_saves_and_reverts_across_workflows(
    staff_client: Client, generator: Workflow, example_bytes: bytes
) -> None:
    services.workflow_import(name="Other", data=example_bytes)
    services.workflow_version_revert(
        workflow=generator,
        number=1,
        user=get_user_model().objects.get(username="operator"),
        base=1,
    )
    response = staff_client.get(reverse("admin:contextadmin_workflowversion_changelist"))
    html = response.content.decode()
    assert response.status_code == 200
    assert "Recent changes" in html
    for text in ("Other", "Generator", "imported", "reverted", "operator (to version 1)"):
        assert text in html
    assert WorkflowVersion.objects.filter(action=VersionAction.REVERT).count() == 1


def _upload(data: bytes) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("context_variables.json", data, content_type="application/json")


# -- the edit page ------------------------------------------------------------------------------
def test_production_warnings_name_each_gated_handoff(
    staff_client: Client, generator: Workflow, example: dict[str, Any]
) -> None:
    example["handoffs"] = [
        {"source_agent": "A", "target_agent": "B", "condition": "${interview_complete}"},
        {
            "source_agent": "A",
            "target_agent": "C",
            "condition": "${interview_complete} and ${context_aware}",
        },
    ]
    services.workflow_import(name="Generator", data=json.dumps(example), replace=True)
    html = staff_client.get(change_url(generator)).content.decode()
    assert (
        "hand-off A → C when ${interview_complete} and ${context_aware}: never fires in "
        "production: environment variables are suppressed (context_aware)"
    ) in html
    assert "hand-off A → B" not in html


def test_a_trigger_of_another_type_ignores_the_matching_options(
    staff_client: Client, generator: Workflow
) -> None:
    data = page_data(staff_client, generator)
    data["derived_variables-0-triggers-0-type"] = "tool_response"
    data["derived_variables-0-triggers-0-tool"] = "close_ticket"
    data["derived_variables-0-triggers-0-agent"] = ""
    data["derived_variables-0-triggers-0-equals"] = ""
    data.pop("derived_variables-0-triggers-0-trim", None)  # hidden: not sent by the page
    response = staff_client.post(change_url(generator), data)
    assert response.status_code == 302, response.context and response.context["errors"]
    exported = json.loads(selectors.workflow_export(workflow=generator))
    assert exported["context_variables"]["derived_variables"][0]["triggers"] == [
        {"type": "tool_response", "tool": "close_ticket"}
    ]


def test_recent_changes_puts_an_approval_first(
    review_on: None, staff: Any, staff_client: Client, generator: Workflow, example: dict
) -> None:
    example["context_variables"]["declarative_variables"][1]["value"] = 50
    services.workflow_import(name="Generator", data=json.dumps(example), replace=True, user=staff)
    services.workflow_import(name="Other", data=json.dumps(example), user=staff)
    services.workflow_version_approve(workflow=generator, number=2, user=other_staff())
    response = staff_client.get(reverse("admin:contextadmin_workflowversion_changelist"))
    rows = [row.workflow.name for row in response.context["cl"].result_list]
    assert rows[0] == "Generator" and rows[1] == "Other"
    assert "approved by reviewer at" in response.content.decode()
