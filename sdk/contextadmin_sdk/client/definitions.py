"""What a runtime tells the server about what it runs with (no Django): the definitions it
loaded, with their version and digest, and the runtime itself; and the published definitions
fetched from the server with ETag caching, so a runtime needs no file on disk.

- ``definitions_payload(config)``: the ``definitions`` of a run start. The canonical export of
  what the runtime runs with, and its ``version`` key: the number the export was taken from,
  and the digest computed here, so a local edit shows. The server pins the run to that version
  when it has those definitions, and keeps them with the run otherwise (docs/versions.md).
- ``runtime_info(framework=..., version=...)``: the ``runtime`` of a run start.
- ``definitions_fetch(...)`` (``RunReporter.definitions``): ``GET
  /api/workflows/<name>/context_variables.json`` with ``If-None-Match``; the body and its ETag
  are kept in memory for the process, and on disk with ``cache_dir``. A server that is down
  falls back to the cached copy with a warning; a refusal (bad token, unknown workflow) raises.
- ``definitions_workflow_check(definitions, workflow=...)``: a ``ValueError`` when definitions
  fetched for one workflow start a run of another. The file names no workflow, so this knows
  only what ``definitions_fetch`` fetched; the server refuses another workflow's version by its
  digest (docs/api.md).
"""

from __future__ import annotations

import logging
import os
import re
import urllib.error
import urllib.parse
import urllib.request
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from contextadmin_sdk.client.refusals import from_api, refusal_fix
from contextadmin_sdk.client.transport import base_url_check, error_body
from contextadmin_sdk.engine.format import (
    ConfigError,
    ContextVariablesFile,
    config_digest,
    config_export_dict,
    parse_config,
)

__all__ = [
    "SDK_DISTRIBUTION",
    "DefinitionsError",
    "definitions_fetch",
    "definitions_payload",
    "definitions_workflow_check",
    "runtime_info",
    "sdk_version",
]

logger = logging.getLogger(__name__)

SDK_DISTRIBUTION = "contextadmin-sdk"
SDK_VERSION_FALLBACK = "0.1.0"  # a source checkout that is not installed
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


class DefinitionsError(RuntimeError):
    """The server refused the definitions (and there is no cached copy to fall back to)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def sdk_version() -> str:
    """The version of the SDK reporting the run (the installed distribution's)."""
    try:
        return metadata.version(SDK_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return SDK_VERSION_FALLBACK


def runtime_info(*, framework: str, version: str) -> dict[str, str]:
    """The ``runtime`` of a run start: ``{"framework": "ag2", "version": "1.2.1", "sdk": ...}``."""
    return {"framework": framework, "version": version, "sdk": sdk_version()}


def definitions_payload(config: ContextVariablesFile) -> dict[str, Any]:
    """The ``definitions`` of a run start: the canonical export and its version key.

    The digest is computed from the definitions themselves, never copied from the file, so
    an edited export is told apart from the version it was taken from (whose number it keeps).
    """
    number = config.version.number if config.version is not None else None
    return {
        "version": {"number": number, "digest": config_digest(config)},
        **config_export_dict(config),
    }


@dataclass
class _Cached:
    etag: str
    body: bytes


_memory: dict[tuple[str, str, str, str], _Cached] = {}  # the process's copies, by request
_served: dict[int, str] = {}  # id(config) -> the workflow it was fetched for, while it lives


def definitions_workflow_check(definitions: object, *, workflow: str) -> None:
    """Refuse definitions fetched for another workflow than the run's, before the run starts:
    the server would refuse them (or, for an edited copy, pin them to the wrong workflow)."""
    served = _served.get(id(definitions))
    if served is not None and served != workflow:
        raise ValueError(
            f"definitions: fetched for workflow {served!r} "
            f"(RunReporter.definitions({served!r})), but the run is for workflow {workflow!r}: "
            f"pass the definitions of {workflow!r}, or start the run as {served!r}"
        )


def _served_as(config: ContextVariablesFile, workflow: str) -> ContextVariablesFile:
    """Remember that ``config`` was fetched for ``workflow`` (forgotten when it is collected,
    before its id can be reused)."""
    key = id(config)
    if key not in _served:
        weakref.finalize(config, _served.pop, key, None)
    _served[key] = workflow
    return config


def definitions_fetch(
    *,
    base_url: str,
    token: str,
    workflow: str,
    environment: str = "development",
    version: int | str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    timeout: float = 10.0,
) -> ContextVariablesFile:
    """Return the workflow's published definitions (or ``version`` N, or ``"draft"``), parsed,
    with their ``version`` key. Sends the cached ETag; a 304 reuses the cached body."""
    key = (base_url_check(base_url), workflow, environment, str(version or "published"))
    path = _cache_path(cache_dir, key)
    cached = _memory.get(key) or _read_cached(path)
    query = {"environment": environment, **({"version": str(version)} if version else {})}
    url = (
        f"{key[0]}/api/workflows/{urllib.parse.quote(workflow, safe='')}/context_variables.json"
        f"?{urllib.parse.urlencode(query)}"
    )
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    if cached is not None:
        headers["If-None-Match"] = cached.etag
    request = urllib.request.Request(url, headers=headers)  # noqa: S310  (the operator's server)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            fetched = _Cached(etag=response.headers.get("ETag", ""), body=response.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 304 and cached is not None:
            return _parsed(cached.body, workflow=workflow)
        if exc.code < 500 and exc.code != 429:
            refused = _refusal(exc, workflow=workflow, base_url=key[0])
            raise DefinitionsError(refused, status=exc.code) from None
        return _fallback(cached, workflow=workflow, why=f"{exc.code} {exc.reason}")
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
        return _fallback(cached, workflow=workflow, why=str(exc))
    config = _parsed(fetched.body, workflow=workflow)
    if fetched.etag:
        _memory[key] = fetched
        _write_cached(path, fetched)
    return config


def _parsed(body: bytes, *, workflow: str) -> ContextVariablesFile:
    try:
        return _served_as(parse_config(body).config, workflow)
    except ConfigError as exc:
        raise DefinitionsError(f"the definitions of {workflow} do not parse: {exc}") from None


def _fallback(cached: _Cached | None, *, workflow: str, why: str) -> ContextVariablesFile:
    if cached is None:
        raise DefinitionsError(
            f"could not fetch the definitions of {workflow} ({why}) and none are cached: "
            "is the server running? (or pass the exported context_variables.json instead)"
        )
    logger.warning(
        "could not fetch the definitions of %s (%s): using the cached copy %s",
        workflow,
        why,
        cached.etag,
    )
    return _parsed(cached.body, workflow=workflow)


def _refusal(exc: urllib.error.HTTPError, *, workflow: str, base_url: str) -> str:
    """Name the cause and the fix of a refused fetch."""
    body = error_body(exc)
    message = body["error"] if from_api(body) else None
    wrong = None if message is not None else base_url
    field = body.get("field") if message is not None else None
    cause = f"{exc.code} {message or exc.reason}"
    return (
        f"the server refused the definitions of {workflow}: {cause}; "
        f"{refusal_fix(exc.code, workflow=workflow, base_url_wrong=wrong, field=field)}"
    )


def _cache_path(
    cache_dir: str | os.PathLike[str] | None, key: tuple[str, str, str, str]
) -> Path | None:
    if cache_dir is None:
        return None
    host = urllib.parse.urlsplit(key[0]).netloc
    name = ".".join(_SAFE_NAME.sub("_", part) for part in (host, *key[1:]))
    return Path(cache_dir) / f"{name}.context_variables.json"


def _read_cached(path: Path | None) -> _Cached | None:
    if path is None:
        return None
    try:
        etag = path.with_suffix(".etag").read_text(encoding="utf-8").strip()
        return _Cached(etag=etag, body=path.read_bytes()) if etag else None
    except OSError:
        return None


def _write_cached(path: Path | None, cached: _Cached) -> None:
    """Write the body, then its ETag (a torn write leaves no ETag: the next fetch is full)."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.with_suffix(".etag").unlink(missing_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_bytes(cached.body)
        temporary.replace(path)
        path.with_suffix(".etag").write_text(cached.etag + "\n", encoding="utf-8")
    except OSError as exc:
        logger.warning("could not cache the definitions in %s: %s", path, exc)


def declared_mapping(definitions: Mapping[str, Any] | ContextVariablesFile) -> Mapping[str, Any]:
    """The ``definitions`` field of a start from what a caller passed."""
    if isinstance(definitions, ContextVariablesFile):
        return definitions_payload(definitions)
    return definitions
