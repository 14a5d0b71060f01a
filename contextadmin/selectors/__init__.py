"""Reads of the definitions, one module per concept; nothing here writes. The package exports
them all, so callers keep ``from contextadmin import selectors``.

- ``workflows``: a workflow's definitions as a document and a config, its export, the JSON
  Schema, the hand-offs that never fire in production;
- ``diff``: what changes between two documents (an import, two versions);
- ``versions``: versions, the published one, and the export pipelines and new runs get."""

from contextadmin.selectors.diff import (
    ConfigDiff,
    DiffEntry,
    documents_diff,
    workflow_diff,
)
from contextadmin.selectors.versions import (
    ExportedVersion,
    VersionNotFound,
    recent_changes,
    review_required,
    version_document,
    version_parse,
    version_status,
    versions_diff,
    workflow_export_version,
    workflow_head,
    workflow_head_number,
    workflow_published_config,
    workflow_version_matching,
    workflow_versions,
)
from contextadmin.selectors.workflows import (
    ENVIRONMENTS,
    PRODUCTION_WARNING,
    UnknownEnvironment,
    derived_flag_names,
    production_warnings,
    schema_export_bytes,
    workflow_config,
    workflow_document,
    workflow_export,
    workflow_get,
    workflow_has_definitions,
)

__all__ = [
    "ENVIRONMENTS",
    "PRODUCTION_WARNING",
    "ConfigDiff",
    "DiffEntry",
    "ExportedVersion",
    "UnknownEnvironment",
    "VersionNotFound",
    "derived_flag_names",
    "documents_diff",
    "production_warnings",
    "recent_changes",
    "review_required",
    "schema_export_bytes",
    "version_document",
    "version_parse",
    "version_status",
    "versions_diff",
    "workflow_config",
    "workflow_diff",
    "workflow_document",
    "workflow_export",
    "workflow_export_version",
    "workflow_get",
    "workflow_has_definitions",
    "workflow_head",
    "workflow_head_number",
    "workflow_published_config",
    "workflow_version_matching",
    "workflow_versions",
]
