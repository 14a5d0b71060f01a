"""Pin a starting run to the definitions its runtime ran with (docs/versions.md).

A runtime sends ``definitions`` at run start: the export it loaded (with the ``version`` key the
server's export writes), or only a reference ``{"version": N, "digest": "sha256:..."}``. The run
is pinned to that version when this server has it (matched by the digest of the definitions,
which the server computes itself); definitions it has never seen (a local edit, another
server's export) are kept with the run as "not published here". A run is never refused because
a newer version was published since: its context is judged by the definitions it pinned.
Without ``definitions`` the run pins the version published now.

The file names no workflow (docs/format.md): what identifies definitions is their digest. So
definitions that are none of this workflow's versions but are a version of *another* workflow
here (its export or production export, by digest) are that workflow's, sent under the wrong
name, and are refused (400 naming ``definitions``), rather than pinned as "not published here,
edited from version N" of a workflow they never came from (docs/api.md).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import orjson
from contextadmin_sdk.engine import preview
from contextadmin_sdk.engine.format import (
    DIGEST_REGEX,
    ConfigError,
    ContextVariablesFile,
    config_export_bytes,
    export_digest,
    parse_config,
)
from django.db.models import Q

from contextadmin.errors import BadRequest, Conflict, TooLarge
from contextadmin.models import Workflow, WorkflowVersion
from contextadmin.selectors import VersionNotFound, workflow_published_config
from runs.models import ApiToken, Run
from runs.tokens import token_sees_workflow

__all__ = [
    "DEFINITIONS_MAX_BYTES",
    "PinnedDefinitions",
    "definitions_foreign_refuse",
    "definitions_pin",
    "runtime_check",
]

DEFINITIONS_MAX_BYTES = 512 * 1024
REFERENCE_KEYS = frozenset({"version", "digest"})
DIGEST_PATTERN = re.compile(DIGEST_REGEX.replace("$", r"\Z"))
RUNTIME_FIELDS = ("framework", "version", "sdk")
RUNTIME_VALUE_MAX_CHARS = 64
RUNTIME_VALUE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*\Z")
RUNTIME_RULE = (
    f"1-{RUNTIME_VALUE_MAX_CHARS} characters of letters, digits, '.', '_', '+' and '-'"
)
EMPTY_DIGEST = export_digest(config_export_bytes(ContextVariablesFile()))  # identifies nothing


@dataclass(frozen=True)
class PinnedDefinitions:
    """What a run is pinned to: its config, as stored with the run, and where it came from."""

    config: ContextVariablesFile
    body: bytes  # the canonical export stored with the run (``Run.definitions``)
    version: int | None  # this server's version number (None: unversioned or not published here)
    source: str  # a Run.DefinitionsSource
    declared: dict[str, Any] = field(default_factory=dict)  # the runtime's version key

    @property
    def document(self) -> dict[str, Any]:
        decoded: dict[str, Any] = orjson.loads(self.body)
        return decoded

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.body).hexdigest()

    def run_fields(self) -> dict[str, Any]:
        """The ``Run`` columns that keep what the run is pinned to."""
        return {
            "definitions": self.document,
            "definitions_hash": self.hash,
            "workflow_version": self.version,
            "definitions_source": self.source,
            "definitions_declared": self.declared,
        }


def runtime_check(runtime: Any) -> dict[str, str]:
    """Validate a run start's ``runtime``: ``{"framework", "version"?, "sdk"?}``, short names."""
    if runtime is None:
        return {}
    if not isinstance(runtime, dict):
        raise BadRequest('runtime: must be an object {"framework", "version", "sdk"}')
    unknown = sorted(set(runtime) - set(RUNTIME_FIELDS))
    if unknown:
        raise BadRequest(
            f"runtime.{unknown[0][:40]}: unknown field (expected {', '.join(RUNTIME_FIELDS)})"
        )
    if "framework" not in runtime:
        raise BadRequest("runtime.framework: required (ag2 or autogen, say)")
    checked: dict[str, str] = {}
    for name in RUNTIME_FIELDS:
        if name not in runtime:
            continue
        value = runtime[name]
        if not isinstance(value, str) or not RUNTIME_VALUE_PATTERN.match(value):
            raise BadRequest(f"runtime.{name}: {RUNTIME_RULE}, got {preview(value, limit=40)}")
        if len(value) > RUNTIME_VALUE_MAX_CHARS:
            raise BadRequest(f"runtime.{name}: at most {RUNTIME_VALUE_MAX_CHARS} characters")
        checked[name] = value
    return checked


def definitions_check(definitions: Any) -> None:
    """Refuse a ``definitions`` field that cannot be a reference or an export, before any
    look-up (size and shape; the export itself is parsed by ``definitions_pin``)."""
    if definitions is None:
        return
    if not isinstance(definitions, dict):
        raise BadRequest(
            'definitions: must be the context_variables.json the runtime ran with, or '
            '{"version": N, "digest": "sha256:..."}'
        )
    size = len(orjson.dumps(definitions))
    if size > DEFINITIONS_MAX_BYTES:
        raise TooLarge(f"definitions: {size} bytes, at most {DEFINITIONS_MAX_BYTES}")
    if definitions and set(definitions) <= REFERENCE_KEYS:
        _reference_parse(definitions)


def definitions_pin(
    *, workflow: Workflow, definitions: Any, token: ApiToken | None = None
) -> PinnedDefinitions:
    """Return what a new run of ``workflow`` is pinned to (``definitions`` checked already);
    definitions of another workflow are refused, named only when ``token`` may see it."""
    if definitions is None:
        return _published(workflow)
    if definitions and set(definitions) <= REFERENCE_KEYS:
        number, digest = _reference_parse(definitions)
        found = _version_find(workflow=workflow, number=number, digest=digest)
        if found is None:
            definitions_foreign_refuse(workflow=workflow, digest=digest, token=token)
            known = f"version {number}" if number is not None else "no version"
            raise Conflict(
                f"definitions: {workflow.name} has {known} with "
                f"{'digest ' + digest if digest else 'that number'}; send the full definitions "
                "(the context_variables.json the runtime ran with) instead"
            )
        return _of_version(found, source=Run.DefinitionsSource.VERSION, declared={
            "number": number, "digest": digest,
        })
    try:
        config = parse_config(definitions).config
    except ConfigError as exc:
        first = exc.issues[0]
        raise BadRequest(
            f"definitions.{first.path}: {first.message}"
            if first.loc
            else f"definitions: {first.message}",
            issues=[{"path": f"definitions.{i.path}", "message": i.message} for i in exc.issues],
        ) from None
    declared = config.version.model_dump() if config.version is not None else {}
    body = config_export_bytes(config)
    digest = export_digest(body)
    found = _version_find(workflow=workflow, number=declared.get("number"), digest=digest)
    if found is not None:
        return _of_version(found, source=Run.DefinitionsSource.VERSION, declared=declared)
    if not WorkflowVersion.objects.filter(workflow=workflow).exists():
        published = _published(workflow)  # an unversioned workflow: its rows are published
        if export_digest(published.body) == digest:
            return PinnedDefinitions(
                config, body, None, Run.DefinitionsSource.VERSION, declared=declared
            )
    definitions_foreign_refuse(workflow=workflow, digest=digest, token=token)
    return PinnedDefinitions(config, body, None, Run.DefinitionsSource.RUNTIME, declared=declared)


def definitions_foreign_refuse(
    *, workflow: Workflow, digest: str | None, token: ApiToken | None
) -> None:
    """Refuse definitions that are none of ``workflow``'s versions but are another workflow's
    (its export or production export, by digest): the runtime named the wrong workflow. Empty
    definitions identify no workflow. A token scoped to ``workflow`` is not told the other's
    name."""
    if digest is None or digest == EMPTY_DIGEST:
        return
    other = _foreign_find(workflow=workflow, digest=digest)
    if other is None:
        return
    whose = (
        f"are version {other.number} of workflow {other.workflow.name!r} ({digest})"
        if token_sees_workflow(token=token, workflow_name=other.workflow.name)
        else f"are another workflow's ({digest} is a version of a workflow other than this one)"
    )
    raise BadRequest(
        f"definitions: {whose}, but the run is for workflow {workflow.name!r}; send the "
        f"context_variables.json of {workflow.name!r}, or start the run as the workflow the "
        "definitions belong to",
        field="definitions",
    )


def _foreign_find(*, workflow: Workflow, digest: str) -> WorkflowVersion | None:
    """A version of another workflow with these definitions, development or production export
    (the newest, by workflow name): two indexed look-ups, whatever the number of versions."""
    hexdigest = digest.removeprefix("sha256:")
    return (
        WorkflowVersion.objects.exclude(workflow=workflow)
        .filter(Q(digest=hexdigest) | Q(digest_production=hexdigest))
        .select_related("workflow")
        .order_by("workflow__name", "-number")
        .first()
    )


def _reference_parse(reference: dict[str, Any]) -> tuple[int | None, str | None]:
    number, digest = reference.get("version"), reference.get("digest")
    if number is not None and (
        not isinstance(number, int) or isinstance(number, bool) or not 0 < number < 2**31
    ):
        raise BadRequest(f"definitions.version: a version number, got {preview(number, limit=40)}")
    if digest is not None and (not isinstance(digest, str) or not DIGEST_PATTERN.match(digest)):
        raise BadRequest(
            "definitions.digest: 'sha256:' and 64 lower-case hex digits, got "
            f"{preview(digest, limit=80)}"
        )
    if number is None and digest is None:
        raise BadRequest("definitions: give the version, its digest, or the full definitions")
    return number, digest


def _version_find(
    *, workflow: Workflow, number: int | None, digest: str | None
) -> WorkflowVersion | None:
    """The version of ``workflow`` with these definitions: the numbered one when its export
    (or its production export) has the digest, else the published or newest one that does."""
    versions = WorkflowVersion.objects.filter(workflow=workflow)
    if number is not None:
        numbered = versions.filter(number=number).first()
        if numbered is not None and (
            digest is None
            or digest == f"sha256:{numbered.digest}"
            or digest == f"sha256:{numbered.digest_production}"
        ):
            return numbered
    if digest is None:
        return None
    matching = list(versions.filter(digest=digest.removeprefix("sha256:")).order_by("-number"))
    for version in matching:
        if version.pk == workflow.published_version_id:
            return version
    return matching[0] if matching else None


def _of_version(
    version: WorkflowVersion, *, source: str, declared: dict[str, Any]
) -> PinnedDefinitions:
    """Pin a version's full definitions (a production run gates environment variables itself)."""
    body = version.export.encode("utf-8")
    try:
        config = parse_config(body).config
    except ConfigError as exc:  # a version stored before a rule tightened
        raise Conflict(
            f"definitions: version {version.number} breaks the format; fix it in the admin",
            issues=[{"path": issue.path, "message": issue.message} for issue in exc.issues],
        ) from None
    return PinnedDefinitions(config, body, version.number, source, declared=declared)


def _published(workflow: Workflow) -> PinnedDefinitions:
    try:  # the published version (docs/versions.md); rows only for an unversioned workflow
        config, version = workflow_published_config(workflow=workflow)
    except VersionNotFound as exc:
        raise Conflict(f"workflow: {exc}") from None
    except ConfigError as exc:  # stored before a rule tightened: the admin shows what to fix
        raise Conflict(
            f"workflow: the definitions of {workflow.name} break the format; fix them in the admin",
            issues=[{"path": issue.path, "message": issue.message} for issue in exc.issues],
        ) from None
    body = config_export_bytes(config)
    return PinnedDefinitions(config, body, version, Run.DefinitionsSource.PUBLISHED)
