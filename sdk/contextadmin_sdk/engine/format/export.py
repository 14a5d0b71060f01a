"""The canonical, byte-stable export, its digest and version key, and the JSON Schema."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .handoff_conditions import condition_names
from .limits import CATEGORIES, CATEGORY_KEYS
from .models import AnyVariable, ContextVariablesFile, DerivedVariable


def config_export_dict(config: ContextVariablesFile, *, production: bool = False) -> dict[str, Any]:
    """Return the canonical export as plain data (key order fixed by the models).

    The production variant has no environment variables, and no hand-offs gated on them.
    """
    section = config.context_variables
    out: dict[str, Any] = {}
    if section.database_name:
        out["database_name"] = section.database_name
    for category in CATEGORIES:
        key = CATEGORY_KEYS[category]
        if category == "environment" and production:
            out[key] = []
            continue
        out[key] = [_variable_dict(v) for v in getattr(section, key)]
    document: dict[str, Any] = {"context_variables": out}
    handoffs = config.handoffs
    if production:
        # Seed 000: in production the environment flags are absent, so a hand-off gated on one
        # can never fire; it is left out so the production file stays valid on its own.
        suppressed = {v.name for v in section.environment_variables}
        handoffs = [h for h in handoffs if not suppressed & set(condition_names(h.condition))]
    if handoffs:
        document["handoffs"] = [h.model_dump(mode="json") for h in handoffs]
    if config.outputs:  # absent when empty, so files without mappings export as before
        document["outputs"] = [output.model_dump(mode="json") for output in config.outputs]
    return document


def _variable_dict(variable: AnyVariable) -> dict[str, Any]:
    data = variable.model_dump(mode="json", exclude_none=True)
    if isinstance(variable, DerivedVariable):
        for trigger in data["triggers"]:
            match = trigger.get("match")
            if match is not None:
                # Omit the defaults so seed-shaped files round-trip unchanged.
                if match.get("case_sensitive") is False:
                    del match["case_sensitive"]
                if match.get("trim") is True:
                    del match["trim"]
    return data


def config_export_bytes(config: ContextVariablesFile, *, production: bool = False) -> bytes:
    """Return the canonical, byte-stable ``context_variables.json`` (2-space indent, newline)."""
    return _export_dump(config_export_dict(config, production=production))


def export_digest(body: bytes) -> str:
    """Return the digest of an export's bytes (without its ``version`` key): ``sha256:<hex>``."""
    return "sha256:" + hashlib.sha256(body).hexdigest()


def config_digest(config: ContextVariablesFile, *, production: bool = False) -> str:
    """Return the digest of the definitions a config holds (its ``version`` key left out)."""
    return export_digest(config_export_bytes(config, production=production))


def export_with_version(body: bytes, *, number: int | None) -> bytes:
    """Return an export with its top-level ``version`` first: the number and the digest of
    ``body``, so the same version always serves the same bytes."""
    document = json.loads(body)
    document.pop("version", None)
    digest = export_digest(_export_dump(document))  # the body itself, for a canonical body
    return _export_dump({"version": {"number": number, "digest": digest}, **document})


def _export_dump(document: dict[str, Any]) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def json_schema() -> dict[str, Any]:
    """Return the draft 2020-12 JSON Schema of the format."""
    return ContextVariablesFile.model_json_schema(mode="validation")
