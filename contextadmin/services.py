"""Writes: import a ``context_variables.json``, admin save helpers, demo setup."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import reversion
from contextadmin_sdk.engine import format as fmt
from contextadmin_sdk.engine import mongo_client
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import CharField, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from contextadmin import specs
from contextadmin.models import (
    Handoff,
    OutputMapping,
    Trigger,
    Variable,
    VersionAction,
    Workflow,
    WorkflowVersion,
    workflow_name_validator,
)
from contextadmin.outputs import output_rows
from contextadmin.selectors import (
    ConfigDiff,
    documents_diff,
    review_required,
    version_document,
    workflow_diff,
    workflow_document,
    workflow_has_definitions,
    workflow_head,
)
from contextadmin.signals import version_published


class ImportRefused(Exception):
    """An import that is valid as a file but may not be applied as asked."""


class StaleEdit(Exception):
    """A save, import or revert started from a version that is no longer the newest.

    Carries what the refusal page needs: who saved the newer version and when, and the diff
    from the version the user started from to the stored one.
    """

    def __init__(self, *, workflow: Workflow, base: int, current: WorkflowVersion) -> None:
        self.workflow, self.base, self.current = workflow, base, current
        when = timezone.localtime(current.created).strftime("%Y-%m-%d %H:%M:%S %Z")
        super().__init__(
            f"{workflow.name} changed since you opened it: version {current.number} was "
            f"{current.get_action_display()} by {current.who} at {when} (you started from "
            f"version {base}). Nothing was changed."
        )

    def diff(self) -> ConfigDiff:
        """Return what changed between the user's starting version and the stored one."""
        base = WorkflowVersion.objects.filter(workflow=self.workflow, number=self.base).first()
        return documents_diff(
            before=version_document(version=base), after=version_document(version=self.current)
        )


class ReviewRefused(Exception):
    """An approval that may not be given (own draft, not the newest, already published)."""


@dataclass(frozen=True)
class ImportResult:
    warnings: list[str]
    diff: ConfigDiff
    created: bool
    version: WorkflowVersion | None = None
    unchanged: WorkflowVersion | None = None  # the version that already holds these definitions


def workflow_edit_lock(*, workflow: Workflow, base: int | None) -> None:
    """Lock the workflow for this transaction and refuse an edit made from a stale version.

    Call inside the transaction that writes. ``base`` is the version number the user's page
    (or preview) showed; None skips the comparison (command line, last writer wins on purpose).
    """
    Workflow.objects.select_for_update().filter(pk=workflow.pk).values_list("pk").first()
    if base is None:
        return
    head = workflow_head(workflow=workflow)
    if head is not None and head.number != base:
        raise StaleEdit(workflow=workflow, base=base, current=head)


def workflow_version_record(
    *,
    workflow: Workflow,
    user: Any = None,
    action: str = VersionAction.SAVE,
    comment: str = "",
    reverted_from: int | None = None,
    skip_unchanged: bool = False,
) -> WorkflowVersion | None:
    """Record the workflow's rows as its next version (inside the writer's transaction).

    One django-reversion revision holds the workflow, its variables, their triggers (added
    explicitly, in one query) and its hand-offs; the canonical export is stored beside it.
    With review off the version is published at once; with review on it is a draft.
    ``skip_unchanged`` records nothing when the export equals the newest version's.
    """
    workflow.refresh_from_db(fields=["published_version"])
    document = workflow_document(workflow=workflow)
    try:
        config = fmt.parse_config(document).config
        export = fmt.config_export_bytes(config).decode("utf-8")
        production = fmt.config_export_bytes(config, production=True).decode("utf-8")
    except fmt.ConfigError:
        # Rows saved before a rule existed: keep them readable, as they are.
        export = production = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    head = workflow_head(workflow=workflow)
    if skip_unchanged and head is not None and head.export == export:
        return None
    number = (head.number if head else 0) + 1
    user = user if getattr(user, "is_authenticated", False) else None
    now = timezone.now()
    with reversion.create_revision(atomic=False):
        if user is not None:
            reversion.set_user(user)
        reversion.set_comment(comment or f"{VersionAction(action).label} version {number}")
        reversion.set_date_created(now)
        reversion.add_to_revision(workflow)
        for trigger in Trigger.objects.filter(variable__workflow=workflow):
            reversion.add_to_revision(trigger)
        reversion.add_meta(
            WorkflowVersion,
            workflow=workflow,
            number=number,
            action=action,
            author=user,
            author_name=user.get_username() if user is not None else "",
            created=now,
            comment=comment,
            reverted_from=reverted_from,
            export=export,
            export_production=production,
            digest=hashlib.sha256(export.encode("utf-8")).hexdigest(),
            digest_production=hashlib.sha256(production.encode("utf-8")).hexdigest(),
        )
    version = WorkflowVersion.objects.get(workflow=workflow, number=number)
    if not review_required():
        _publish(workflow=workflow, version=version)
    return version


def _publish(*, workflow: Workflow, version: WorkflowVersion) -> None:
    version.published_at = timezone.now()
    version.save(update_fields=["published_at"])
    workflow.published_version = version
    Workflow.objects.filter(pk=workflow.pk).update(published_version=version)
    version_published.send(sender=WorkflowVersion, workflow=workflow, version=version)


@transaction.atomic
def workflow_version_approve(
    *, workflow: Workflow, number: int, user: Any, comment: str = "", base: int | None = None
) -> WorkflowVersion:
    """Approve and publish the newest draft; the approver must not be its author.

    Only the newest version can be approved: an edit after the reviewer opened the draft makes
    a new version, which withdraws the approval asked for (flagsmith#4465).
    """
    workflow_edit_lock(workflow=workflow, base=base)
    workflow.refresh_from_db(fields=["published_version"])
    head = workflow_head(workflow=workflow)
    if head is None or number > head.number or number < 1:
        raise ReviewRefused(
            f"{workflow.name} has no version {number}"
            + (f" (its newest is version {head.number})" if head else "")
        )
    if head.number != number:
        raise ReviewRefused(
            f"version {number} is not the newest version of {workflow.name} (version "
            f"{head.number} is): review that one"
        )
    if workflow.published_version_id == head.pk:
        raise ReviewRefused(f"version {number} is already published")
    if head.author_id is not None and head.author_id == getattr(user, "pk", None):
        raise ReviewRefused(
            "you cannot approve your own draft: a different staff user must review it"
        )
    try:  # published definitions are what new runs start from: never ones that break them
        fmt.parse_config(head.export)
    except fmt.ConfigError as exc:
        raise ReviewRefused(
            f"version {number} breaks the format ({exc.issues[0]}): no run could start from it; "
            "fix the definitions and save a new version"
        ) from None
    head.approved_by = user
    head.approved_by_name = user.get_username()
    head.approved_at = timezone.now()
    head.approval_comment = comment
    head.save(update_fields=["approved_by", "approved_by_name", "approved_at", "approval_comment"])
    _publish(workflow=workflow, version=head)
    return head


@transaction.atomic
def workflow_version_revert(
    *, workflow: Workflow, number: int, user: Any, base: int | None, comment: str = ""
) -> WorkflowVersion:
    """Make version ``number``'s definitions the newest version again (a draft under review).

    Applies the stored canonical export through the importer, so a revert is validated like
    any import and works across schema migrations; it is a new version, never a rewrite.
    """
    workflow_edit_lock(workflow=workflow, base=base)
    target = WorkflowVersion.objects.filter(workflow=workflow, number=number).first()
    if target is None:
        raise ImportRefused(f"version: {workflow.name} has no version {number}")
    result = workflow_import(
        name=workflow.name,
        data=target.export,
        replace=True,
        user=user,
        action=VersionAction.REVERT,
        comment=comment or f"Revert to version {number}",
        reverted_from=number,
    )
    assert result.version is not None
    return result.version


@transaction.atomic
def workflow_import(
    *,
    name: str,
    data: bytes | str | Mapping[str, Any],
    replace: bool = False,
    dry_run: bool = False,
    user: Any = None,
    base: int | None = None,
    comment: str = "",
    action: str = VersionAction.IMPORT,
    reverted_from: int | None = None,
) -> ImportResult:
    """Make a ``context_variables.json`` the definitions of a workflow, all or nothing.

    Raises ``ConfigError`` (JSON paths) for a file that breaks the format and ``ImportRefused``
    for a bad workflow name or, without ``replace``, a workflow that already has other
    definitions (the ones it has: nothing changes, no refusal).
    A dry run validates and diffs exactly like the real import but writes nothing. A real
    import is a new version; with ``base`` (the version the preview was made from) it is
    refused with ``StaleEdit`` when someone saved in between.
    """
    try:
        workflow_name_validator(name)
    except ValidationError:
        raise ImportRefused(
            f"workflow name {name!r} is invalid: start with a letter, then up to 99 letters, "
            "digits, _ or -"
        ) from None
    problem = fmt.text_problem(comment)
    if problem:  # e.g. --comment "$(git log -1 --format=%s)" of a non-UTF-8 commit
        raise ImportRefused(f"comment: {problem}; nothing changed")
    parsed = specs.config_parse_all(data)  # every problem at once, not stage by stage
    workflow = Workflow.objects.select_for_update().filter(name=name).first()
    if workflow is not None and not dry_run:
        workflow_edit_lock(workflow=workflow, base=base)
    diff = workflow_diff(workflow=workflow, config=parsed.config)
    head = workflow_head(workflow=workflow) if workflow is not None else None
    unchanged = (
        action == VersionAction.IMPORT  # a revert is always a version of its own
        and head is not None
        and head.export == fmt.config_export_bytes(parsed.config).decode("utf-8")
    )  # the same definitions again: nothing to replace (a pipeline may re-run its import)
    if (
        workflow is not None
        and not replace
        and not unchanged
        and workflow_has_definitions(workflow=workflow)
    ):
        raise ImportRefused(
            f"workflow {name} already has definitions; importing replaces all of them: "
            "re-run with --replace (add --dry-run first to preview the diff)"
        )
    result = ImportResult(warnings=parsed.warnings, diff=diff, created=workflow is None)
    if unchanged:  # no new version, and no row re-made under an open page
        return dataclasses.replace(result, unchanged=head)
    if dry_run:
        return result
    database_name = parsed.config.context_variables.database_name or ""
    if workflow is None:
        workflow = Workflow.objects.create(name=name, database_name=database_name)
    else:
        workflow.database_name = database_name
        workflow.save(update_fields=["database_name", "updated"])
        workflow.handoffs.all().delete()
        workflow.outputs.all().delete()
        workflow.variables.all().delete()
    _definitions_create(workflow=workflow, config=parsed.config)
    version = workflow_version_record(
        workflow=workflow, user=user, action=action, comment=comment, reverted_from=reverted_from
    )
    return ImportResult(
        warnings=result.warnings, diff=diff, created=result.created, version=version
    )


def _definitions_create(*, workflow: Workflow, config: fmt.ContextVariablesFile) -> None:
    variables, handoffs = specs.rows_from_config(workflow=workflow, config=config)
    created = Variable.objects.bulk_create([variable for variable, _ in variables], batch_size=500)
    triggers = []
    for saved, (_, rows) in zip(created, variables, strict=True):
        for trigger in rows:
            trigger.variable = saved
            triggers.append(trigger)
    Trigger.objects.bulk_create(triggers, batch_size=500)
    Handoff.objects.bulk_create(handoffs, batch_size=500)
    OutputMapping.objects.bulk_create(output_rows(workflow=workflow, config=config))


@transaction.atomic
def variable_names_release(*, workflow: Workflow, variable_ids: Iterable[int]) -> None:
    """Rename variables about to be renamed or deleted to placeholders, freeing their names.

    The admin saves one category at a time; without this, swapping two names or moving a name
    to another category would trip the unique (workflow, name) constraint half-way.
    """
    ids = list(variable_ids)
    if ids:
        Variable.objects.filter(workflow=workflow, pk__in=ids).update(
            name=Concat(Value("~"), Cast("pk", output_field=CharField()))
        )


# -- demo -------------------------------------------------------------------------------------
@dataclass
class SuperuserResult:
    username: str
    password: str | None = None  # set only when generated here, to be shown once
    created: bool = False
    note: str = ""


@transaction.atomic
def superuser_ensure(
    *, username: str | None = None, password: str | None = None
) -> SuperuserResult:
    """Create the first operator: the given one, or ``admin`` with a generated password.

    With a username and password, create that superuser unless the username exists. Without,
    create ``admin`` only when there is no superuser at all.
    """
    User = get_user_model()
    if username and password:
        if User.objects.filter(username=username).exists():
            return SuperuserResult(username, note=f"user {username} exists: left unchanged")
        User.objects.create_superuser(username=username, email="", password=password)
        return SuperuserResult(username, created=True)
    if User.objects.filter(is_superuser=True).exists():
        return SuperuserResult("", note="a superuser exists: none created")
    if User.objects.filter(username="admin").exists():
        return SuperuserResult(
            "admin", note="user admin exists but is not a superuser: none created"
        )
    generated = secrets.token_urlsafe(12)
    User.objects.create_superuser(username="admin", email="", password=generated)
    return SuperuserResult("admin", password=generated, created=True)


@dataclass
class MongoSeedResult:
    reachable: bool
    seeded: list[str] = field(default_factory=list)  # "database.collection (N documents)"
    skipped: list[str] = field(default_factory=list)  # not empty already
    note: str = ""


def mongo_documents_seed(
    *, uri: str, documents: Mapping[str, Mapping[str, list[dict[str, Any]]]], timeout_ms: int = 2000
) -> MongoSeedResult:
    """Insert demo documents into each empty collection of a MongoDB (never raises on outage)."""
    from pymongo.errors import PyMongoError  # here: pymongo costs every manage.py start 0.3 s

    client = mongo_client(uri, timeout_ms=timeout_ms)
    try:
        client.admin.command("ping")
        result = MongoSeedResult(reachable=True)
        for database, collections in documents.items():
            for collection, rows in collections.items():
                target = client[database][collection]
                label = f"{database}.{collection}"
                if target.find_one() is not None:
                    result.skipped.append(label)
                    continue
                if rows:
                    target.insert_many([dict(row) for row in rows])
                result.seeded.append(f"{label} ({len(rows)} documents)")
        return result
    except PyMongoError as exc:
        return MongoSeedResult(reachable=False, note=f"MongoDB unreachable: {exc}")
    finally:
        client.close()
