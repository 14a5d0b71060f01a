"""build_context: seed 000 "Runtime Loading" steps 1-7 with docs/engine.md's *Decisions*."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

import pytest
from contextadmin_sdk.engine import (
    PREVIEW_MAX_CHARS,
    RunState,
    build_context,
    coerce_env,
    evaluate_condition,
)
from contextadmin_sdk.engine import loader as loader_module
from contextadmin_sdk.engine.format import (
    ContextVariables,
    ContextVariablesFile,
    EnvironmentSource,
    EnvironmentVariable,
    parse_config,
)
from contextadmin_sdk.engine.mongo import Lookup
from hypothesis import given, settings
from hypothesis import strategies as st

from .support import config_with, db_var, demo_config, derived_var, env_var, says

BASE_ONLY = {"enterprise_id", "workflow_name", "context_aware", "monetization_enabled"}


def build(config: Any, environ: dict[str, str] | None = None, **kwargs: Any):
    return build_context(
        config, workflow_name="Generator", enterprise_id="acme", environ=environ or {}, **kwargs
    )


# -- step 1: minimal base ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("environ", "expected", "statuses"),
    [
        pytest.param(
            {},
            {"context_aware": False, "monetization_enabled": False},
            ("default", "default"),
            id="unset-means-false",
        ),
        pytest.param(
            {"CONTEXT_AWARE": "1", "MONETIZATION_ENABLED": "on"},
            {"context_aware": True, "monetization_enabled": True},
            ("resolved", "resolved"),
            id="truthy",
        ),
        pytest.param(
            {"CONTEXT_AWARE": "0", "MONETIZATION_ENABLED": "maybe"},
            {"context_aware": False, "monetization_enabled": False},
            ("resolved", "resolved"),
            id="anything-else-is-false",
        ),
        pytest.param(
            {"ENVIRONMENT": "production", "CONTEXT_AWARE": "1"},
            {},
            ("suppressed", "suppressed"),
            id="production-has-no-flags",
        ),
        pytest.param(
            {"ENVIRONMENT": " Production ", "MONETIZATION_ENABLED": "1"},
            {},
            ("suppressed", "suppressed"),
            id="production-any-case",
        ),
    ],
)
def test_minimal_base(
    environ: dict[str, str], expected: dict[str, bool], statuses: tuple[str, str]
) -> None:
    ctx = build({}, environ)
    assert ctx.values == {"enterprise_id": "acme", "workflow_name": "Generator", **expected}
    assert ctx.provenance["enterprise_id"] == {
        "category": "base",
        "source": "run",
        "status": "resolved",
        "reason": None,
    }
    for name, status in zip(("context_aware", "monetization_enabled"), statuses, strict=True):
        assert ctx.provenance[name]["category"] == "base"
        assert ctx.provenance[name]["status"] == status
        if status == "suppressed":
            assert ctx.provenance[name]["reason"] == "suppressed in production"


def test_reads_the_given_environ_never_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTEXT_AWARE", "1")
    monkeypatch.setenv("ENVIRONMENT", "production")
    assert build({}, {}).values["context_aware"] is False
    assert build_context({}, workflow_name="W", enterprise_id="e").values["enterprise_id"] == "e"
    assert "context_aware" not in build_context({}, workflow_name="W", enterprise_id="e").values


# -- step 2: validation -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("config", "path"),
    [
        pytest.param(b"{not json", "(document)", id="not-json"),
        pytest.param([], "(document)", id="not-an-object"),
        pytest.param({"context_variables": []}, "context_variables", id="section-not-an-object"),
        pytest.param(
            config_with(
                environment_variables=[{"name": "flag", "source": {"type": "environment"}}]
            ),
            "context_variables.environment_variables[0].source.env_var",
            id="missing-env-var",
        ),
        pytest.param(
            config_with(derived_variables=[derived_var("done", {"type": "timer", "agent": "A"})]),
            "context_variables.derived_variables[0].triggers[0]",
            id="unknown-trigger-type",
        ),
        pytest.param(
            config_with(declarative_variables=[{"name": "x", "type": "integer", "value": "25"}]),
            "context_variables.declarative_variables[0].value",
            id="value-of-wrong-type",
        ),
        pytest.param(
            config_with(
                declarative_variables=[{"name": "a", "value": 1}, {"name": "a", "value": 2}]
            ),
            "context_variables.declarative_variables[1].name",
            id="duplicate-name",
        ),
        pytest.param(
            config_with(declarative_variables=[{"name": "Bad-Name", "value": 1}]),
            "context_variables.declarative_variables[0].name",
            id="bad-name",
        ),
        pytest.param(
            {
                **config_with(),
                "handoffs": [{"source_agent": "A", "target_agent": "B", "condition": "${nope}"}],
            },
            "handoffs[0].condition",
            id="bad-handoff-condition",
        ),
        pytest.param(b"[" * 100_000, "(document)", id="absurdly-nested"),
    ],
)
def test_invalid_config_gives_minimal_base_and_names_the_path(config: Any, path: str) -> None:
    ctx = build(config, {"CONTEXT_AWARE": "1"})
    assert set(ctx.values) == BASE_ONLY
    assert ctx.values["context_aware"] is True
    assert any(f"invalid context_variables.json at {path}" in w for w in ctx.warnings), ctx.warnings
    assert ctx.warnings[-1] == "using the minimal base context only"


def test_invalid_config_warnings_are_capped() -> None:
    config = config_with(declarative_variables=[{"name": f"X{i}", "value": 1} for i in range(50)])
    ctx = build(config)
    assert len(ctx.warnings) == loader_module.MAX_ISSUE_WARNINGS + 2
    assert "30 more issues" in ctx.warnings[-2]


@pytest.mark.parametrize(
    ("config", "warning"),
    [
        pytest.param(
            {"variables": [1], "context_variables": {}},
            "variables: legacy key ignored",
            id="top-level",
        ),
        pytest.param(
            {"context_variables": {"variables": []}},
            "context_variables.variables: legacy key ignored",
            id="nested",
        ),
    ],
)
def test_legacy_keys_warn_and_are_ignored(config: dict[str, Any], warning: str) -> None:
    ctx = build(config)
    assert any(warning in w for w in ctx.warnings)
    assert set(ctx.values) == BASE_ONLY


def test_flat_derived_variables_are_accepted() -> None:
    ctx = build(
        {"context_variables": {}, "derived_variables": [derived_var("done", says("A", "x"))]}
    )
    assert ctx.values["done"] is False
    assert ctx.warnings == []


@pytest.mark.parametrize(
    "form",
    ["dict", "bytes", "str", "parsed-file", "parsed-config"],
)
def test_every_config_form_gives_the_same_context(form: str) -> None:
    raw = demo_config()
    config = {
        "dict": raw,
        "bytes": json.dumps(raw).encode(),
        "str": json.dumps(raw),
        "parsed-file": parse_config(raw).config,
        "parsed-config": parse_config(raw),
    }[form]
    environ = {"CONTEXT_AWARE": "yes"}
    assert build(config, environ).to_dict() == build(raw, environ).to_dict()


# -- step 3: gating ---------------------------------------------------------------------------
def test_production_suppresses_environment_variables_visibly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = config_with(
        environment_variables=[
            env_var("context_aware", "CONTEXT_AWARE"),
            env_var("beta_ui", "BETA_UI", default=True),
        ]
    )
    with caplog.at_level(logging.INFO, logger="contextadmin_sdk.engine"):
        ctx = build(config, {"ENVIRONMENT": "production", "CONTEXT_AWARE": "1", "BETA_UI": "1"})
    assert "context_aware" not in ctx.values and "beta_ui" not in ctx.values
    assert ctx.provenance["beta_ui"] == {
        "category": "environment",
        "source": "BETA_UI",
        "status": "suppressed",
        "reason": "suppressed in production",
    }
    suppression = [r for r in caplog.records if "production: suppressed 2" in r.getMessage()]
    assert [r.levelno for r in suppression] == [logging.INFO]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # nothing to purge


def test_defensive_purge_removes_leaks_and_warns(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """If gating ever let an environment variable through, the final purge still drops it."""
    original = loader_module._gate

    def leaky_gate(config: Any, b: Any, *, production: bool) -> Any:
        return original(config, b, production=False)

    monkeypatch.setattr(loader_module, "_gate", leaky_gate)
    config = config_with(environment_variables=[env_var("beta_ui", "BETA_UI")])
    with caplog.at_level(logging.INFO, logger="contextadmin_sdk.engine"):
        ctx = build(config, {"ENVIRONMENT": "production", "BETA_UI": "1"})
    assert "beta_ui" not in ctx.values
    assert ctx.provenance["beta_ui"]["status"] == "suppressed"
    assert ctx.provenance["beta_ui"]["reason"] == "suppressed in production (defensive purge)"
    assert any("purged" in w and "beta_ui" in w for w in ctx.warnings)
    assert [r.levelno for r in caplog.records if "purged" in r.getMessage()] == [logging.WARNING]


SCHEMA_CONFIG = config_with(
    database_name="main", database_variables=[db_var("overview", "Concepts", "Overview")]
)


@pytest.mark.parametrize(
    ("value", "suppressed"),
    [
        pytest.param(None, False, id="unset-includes"),
        pytest.param("", False, id="empty-includes"),
        pytest.param("1", False, id="1"),
        pytest.param("true", False, id="true"),
        pytest.param("0", True, id="0"),
        pytest.param("false", True, id="false"),
        pytest.param(" NO ", True, id="no-any-case-trimmed"),
        pytest.param("Off", True, id="off"),
    ],
)
def test_schema_gating(value: str | None, suppressed: bool) -> None:
    environ = {} if value is None else {"CONTEXT_INCLUDE_SCHEMA": value}
    entry = build(SCHEMA_CONFIG, environ).provenance["overview"]
    assert entry["source"] == "db.main.Concepts.Overview"
    if suppressed:
        assert entry["status"] == "suppressed"
        assert "CONTEXT_INCLUDE_SCHEMA" in entry["reason"]
    else:
        assert entry == {
            "category": "database",
            "source": "db.main.Concepts.Overview",
            "status": "unresolved",
            "reason": "no MongoDB configured",
        }


# -- step 4: environment coercion -------------------------------------------------------------
MISSING = object()


@pytest.mark.parametrize(
    ("type_", "raw", "default", "value", "status", "warns"),
    [
        pytest.param("boolean", "1", None, True, "resolved", False, id="bool-1"),
        pytest.param("boolean", "true", None, True, "resolved", False, id="bool-true"),
        pytest.param(
            "boolean", " YES ", None, True, "resolved", False, id="bool-yes-trimmed-any-case"
        ),
        pytest.param("boolean", "On", None, True, "resolved", False, id="bool-on"),
        pytest.param("boolean", "0", True, False, "resolved", False, id="bool-0"),
        pytest.param(
            "boolean", "enabled", None, False, "resolved", False, id="bool-other-is-false"
        ),
        pytest.param("boolean", "", None, False, "resolved", False, id="bool-empty-is-false"),
        pytest.param("boolean", None, None, False, "default", False, id="bool-unset-is-false"),
        pytest.param("boolean", None, True, True, "default", False, id="bool-unset-default"),
        pytest.param("integer", "42", None, 42, "resolved", False, id="int"),
        pytest.param("integer", " -7 ", None, -7, "resolved", False, id="int-trimmed-negative"),
        pytest.param("integer", "abc", 5, 5, "default", True, id="int-unparsable-default"),
        pytest.param("integer", "3.5", 5, 5, "default", True, id="int-float-unparsable"),
        pytest.param(
            "integer", "abc", None, MISSING, "unresolved", True, id="int-unparsable-no-default"
        ),
        pytest.param("integer", None, 10, 10, "default", False, id="int-unset-default"),
        pytest.param(
            "integer", None, None, MISSING, "unresolved", False, id="int-unset-no-default"
        ),
        pytest.param("number", "0.5", None, 0.5, "resolved", False, id="number"),
        pytest.param("number", "3", None, 3, "resolved", False, id="number-integral"),
        pytest.param("number", "1e3", None, 1000.0, "resolved", False, id="number-exponent"),
        pytest.param("number", "nan", 1.5, 1.5, "default", True, id="number-nan-rejected"),
        pytest.param("number", "inf", None, MISSING, "unresolved", True, id="number-inf-rejected"),
        pytest.param("string", " hi ", None, " hi ", "resolved", False, id="string-verbatim"),
        pytest.param("string", None, "x", "x", "default", False, id="string-unset-default"),
        pytest.param(
            "string", None, None, MISSING, "unresolved", False, id="string-unset-no-default"
        ),
    ],
)
def test_environment_coercion(
    type_: str, raw: str | None, default: Any, value: Any, status: str, warns: bool
) -> None:
    extra = {} if default is None else {"default": default}
    config = config_with(environment_variables=[env_var("knob", "KNOB", type_, **extra)])
    ctx = build(config, {} if raw is None else {"KNOB": raw})
    entry = ctx.provenance["knob"]
    assert (entry["category"], entry["source"], entry["status"]) == ("environment", "KNOB", status)
    if value is MISSING:
        assert "knob" not in ctx.values
        assert entry["reason"]
    else:
        assert ctx.values["knob"] == value
        assert type(ctx.values["knob"]) is type(value)
    assert bool(ctx.warnings) == warns, ctx.warnings
    if warns:
        assert ctx.warnings[0].startswith("knob: KNOB=")


def test_unset_without_default_reason_names_the_env_var() -> None:
    config = config_with(environment_variables=[env_var("limit", "LIMIT", "integer")])
    assert build(config).provenance["limit"]["reason"] == "LIMIT is unset and has no default"


def test_declared_environment_variable_overrides_base_flag() -> None:
    config = config_with(
        environment_variables=[env_var("context_aware", "CONTEXT_AWARE", default=True)]
    )
    ctx = build(config)
    assert ctx.values["context_aware"] is True
    assert ctx.provenance["context_aware"]["category"] == "environment"
    assert ctx.provenance["context_aware"]["status"] == "default"


@pytest.mark.parametrize(
    ("raw", "type_", "expected"),
    [
        ("12", "integer", (True, 12)),
        ("1_000", "integer", (False, None)),
        ("+3", "integer", (True, 3)),
        (".5", "number", (True, 0.5)),
        ("1.", "number", (True, 1.0)),
        ("", "number", (False, None)),
        ("x", "string", (True, "x")),
        ("TRUE", "boolean", (True, True)),
    ],
)
def test_coerce_env(raw: str, type_: str, expected: tuple[bool, Any]) -> None:
    assert coerce_env(raw, type_) == expected


# -- steps 5, 6 and derived -------------------------------------------------------------------
def test_declarative_values_are_verbatim_and_never_gated() -> None:
    config = config_with(
        declarative_variables=[
            {"name": "product_tier", "type": "string", "value": "beta"},
            {"name": "max_items", "type": "integer", "value": 25},
            {"name": "ratio", "type": "number", "value": 0.25},
            {"name": "shiny", "type": "boolean", "value": False},
        ]
    )
    ctx = build(config, {"ENVIRONMENT": "production", "CONTEXT_INCLUDE_SCHEMA": "0"})
    assert {k: ctx.values[k] for k in ("product_tier", "max_items", "ratio", "shiny")} == {
        "product_tier": "beta",
        "max_items": 25,
        "ratio": 0.25,
        "shiny": False,
    }
    assert ctx.provenance["max_items"] == {
        "category": "declarative",
        "source": "static",
        "status": "resolved",
        "reason": None,
    }


def test_database_name_per_variable_overrides_workflow_default() -> None:
    config = config_with(
        database_name="main",
        database_variables=[
            db_var("a", "Concepts", "Overview"),
            db_var("b", "Plans", "tier.name", database_name="billing"),
        ],
    )
    provenance = build(config).provenance
    assert provenance["a"]["source"] == "db.main.Concepts.Overview"
    assert provenance["b"]["source"] == "db.billing.Plans.tier.name"


def test_database_lookup_errors_never_escape() -> None:
    class Broken:
        def __getitem__(self, name: str) -> Any:
            raise RuntimeError("driver bug")

    ctx = build(SCHEMA_CONFIG, mongo=Broken())  # type: ignore[arg-type]
    assert ctx.provenance["overview"]["status"] == "unresolved"
    assert ctx.provenance["overview"]["reason"] == "MongoDB error: RuntimeError"


def test_derived_variables_are_seeded_with_their_defaults() -> None:
    config = config_with(
        derived_variables=[
            derived_var("started", says("A", "go"), default=True),
            derived_var("done", says("A", "stop")),
        ]
    )
    ctx = build(config)
    assert (ctx.values["started"], ctx.values["done"]) == (True, False)
    assert ctx.provenance["done"] == {
        "category": "derived",
        "source": "derived",
        "status": "default",
        "reason": None,
    }


def test_demo_workflow_in_development() -> None:
    ctx = build(demo_config(), {"CONTEXT_AWARE": "true"})
    assert ctx.values == {
        "enterprise_id": "acme",
        "workflow_name": "Generator",
        "context_aware": True,
        "monetization_enabled": False,
        "product_tier": "beta",
        "max_items": 25,
        "interview_complete": False,
    }
    assert ctx.provenance["concept_overview"]["status"] == "unresolved"
    assert ctx.warnings == []


def test_every_provenance_entry_has_the_four_keys() -> None:
    ctx = build(demo_config(), {"ENVIRONMENT": "production"})
    assert set(ctx.provenance) >= set(ctx.values)
    for entry in ctx.provenance.values():
        assert set(entry) == {"category", "source", "status", "reason"}
        assert entry["status"] in ("resolved", "default", "unresolved", "suppressed")
    json.dumps(ctx.to_dict())


# -- step 7: logging --------------------------------------------------------------------------
def _secret_config() -> ContextVariablesFile:
    """A config the schema would refuse (secret-looking env var), built around the validator."""
    variable = EnvironmentVariable.model_construct(
        name="service_key",
        type="string",
        description="",
        default=None,
        source=EnvironmentSource.model_construct(type="environment", env_var="SERVICE_API_KEY"),
    )
    section = ContextVariables.model_construct(
        database_name=None,
        declarative_variables=[],
        database_variables=[],
        environment_variables=[variable],
        derived_variables=[],
    )
    return ContextVariablesFile.model_construct(context_variables=section, handoffs=[])


def test_secret_env_values_are_never_loaded_or_logged(caplog: pytest.LogCaptureFixture) -> None:
    secret = "sk-live-0123456789abcdef"
    with caplog.at_level(logging.DEBUG, logger="contextadmin_sdk.engine"):
        ctx = build(_secret_config(), {"SERVICE_API_KEY": secret, "CONTEXT_VERBOSE_DEBUG": "1"})
    assert "service_key" not in ctx.values
    assert ctx.provenance["service_key"]["status"] == "suppressed"
    assert "looks like a secret" in ctx.provenance["service_key"]["reason"]
    assert secret not in caplog.text
    assert secret not in json.dumps(ctx.to_dict())


def test_log_previews_are_cut(caplog: pytest.LogCaptureFixture) -> None:
    long = "x" * 900
    config = config_with(declarative_variables=[{"name": "blob", "value": long}])
    with caplog.at_level(logging.DEBUG, logger="contextadmin_sdk.engine"):
        build(config, {"CONTEXT_VERBOSE_DEBUG": "1"})
    lines = [r.getMessage() for r in caplog.records if "blob" in r.getMessage()]
    assert lines, "the variable is logged at DEBUG"
    for line in lines:
        assert long not in line
        assert "x" * PREVIEW_MAX_CHARS not in line  # the preview includes the opening quote
        assert "(902 chars)" in line


def test_summary_line_counts_statuses(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="contextadmin_sdk.engine"):
        build(demo_config())
    summary = [r.getMessage() for r in caplog.records if r.getMessage().startswith("context for")]
    assert summary == [
        "context for workflow=Generator enterprise=acme: 7 values "
        "(4 resolved, 3 default, 1 unresolved, 0 suppressed)"
    ]


@pytest.mark.parametrize(
    ("flag", "diffs"), [("1", True), ("yes", True), ("0", False), (None, False)]
)
def test_verbose_debug_logs_a_diff_per_step(
    flag: str | None, diffs: bool, caplog: pytest.LogCaptureFixture
) -> None:
    environ = {} if flag is None else {"CONTEXT_VERBOSE_DEBUG": flag}
    with caplog.at_level(logging.DEBUG, logger="contextadmin_sdk.engine"):
        build(demo_config(), environ)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("context diff")]
    if not diffs:
        assert lines == []
        return
    assert all(
        r.levelno == logging.DEBUG for r in caplog.records if "context diff" in r.getMessage()
    )
    assert 'context diff after step 5 (declarative): +product_tier="beta"; +max_items=25' in lines
    assert "context diff after step 3 (gating): (no change)" in lines
    assert "context diff after derived defaults: +interview_complete=false" in lines


# -- determinism ------------------------------------------------------------------------------
ENV_KEYS = [
    "ENVIRONMENT",
    "CONTEXT_INCLUDE_SCHEMA",
    "CONTEXT_AWARE",
    "MONETIZATION_ENABLED",
    "KNOB",
]


@settings(max_examples=60, deadline=None)
@given(
    environ=st.dictionaries(
        st.sampled_from(ENV_KEYS),
        st.one_of(
            st.sampled_from(["production", "1", "0", "true", "off", " 7 ", "x"]),
            st.text(max_size=8),
        ),
    ),
    knob_type=st.sampled_from(["string", "integer", "number", "boolean"]),
)
def test_build_context_is_deterministic(environ: dict[str, str], knob_type: str) -> None:
    config = demo_config()
    config["context_variables"]["environment_variables"].append(env_var("knob", "KNOB", knob_type))
    first = build(config, environ).to_dict()
    assert build(json.dumps(config), dict(environ)).to_dict() == first
    assert json.loads(json.dumps(first)) == first  # JSON-safe


# -- issue 14: coercion never raises (5) ------------------------------------------------------
HUGE = "9" * 5_000


@pytest.mark.parametrize(
    ("type_", "raw", "problem"),
    [
        pytest.param("integer", HUGE, "longer than 1000 characters", id="int-5000-digits"),
        pytest.param("integer", "-" + HUGE, "longer than 1000 characters", id="int-5000-negative"),
        pytest.param("number", HUGE, "longer than 1000 characters", id="number-5000-digits"),
        pytest.param("number", HUGE + ".5", "longer than 1000 characters", id="number-5000-float"),
        pytest.param("integer", "9" * 500, "longer than 100 characters", id="int-500-digits"),
        pytest.param("number", "0." + "1" * 200, "longer than 100 characters", id="number-long"),
        pytest.param("integer", "9" * 40, "outside the signed 64-bit range", id="int-beyond-64"),
        pytest.param(
            "number", "9" * 40, "outside the signed 64-bit range", id="number-integral-beyond-64"
        ),
        pytest.param("number", "1e999", "is not a valid number", id="number-overflows-to-inf"),
        pytest.param("string", "x" * 1_001, "longer than 1000 characters", id="string-too-long"),
        pytest.param("string", "a\udcff", "lone surrogate", id="string-not-utf8"),
    ],
)
def test_env_coercion_never_raises_and_falls_back_to_the_default(
    type_: str, raw: str, problem: str
) -> None:
    assert coerce_env(raw, type_) == (False, None)
    default = {"integer": 5, "number": 1.5, "string": "d"}[type_]
    config = config_with(
        environment_variables=[env_var("knob", "KNOB", type_, default=default)]
    )
    ctx = build(config, {"KNOB": raw})
    assert ctx.values["knob"] == default
    assert ctx.provenance["knob"]["status"] == "default"
    assert problem in ctx.provenance["knob"]["reason"]
    assert ctx.warnings and ctx.warnings[0].startswith("knob: KNOB=")
    assert HUGE not in json.dumps(ctx.to_dict())  # the preview is cut
    no_default = build(
        config_with(environment_variables=[env_var("knob", "KNOB", type_)]), {"KNOB": raw}
    )
    assert no_default.provenance["knob"]["status"] == "unresolved"


@settings(max_examples=300, deadline=None)
@given(
    raw=st.one_of(
        st.text(max_size=60),
        st.from_regex(r"[+-]?\d{1,6000}(\.\d{0,50})?([eE][+-]?\d{1,6})?", fullmatch=True),
    ),
    type_=st.sampled_from(["string", "integer", "number", "boolean"]),
)
def test_coerce_env_never_raises(raw: str, type_: str) -> None:
    ok, value = coerce_env(raw, type_)
    if ok:
        assert json.loads(json.dumps(value)) == value


@pytest.mark.parametrize("length", [10_000, 100_000])
def test_number_coercion_is_linear(length: int) -> None:
    started = time.perf_counter()
    assert coerce_env("1" * length + "x", "number") == (False, None)
    assert coerce_env("1" * 50 + "x", "number") == (False, None)
    assert time.perf_counter() - started < 1.0


# -- issue 14: credential-looking values are redacted at read time (10) -----------------------
@pytest.mark.parametrize(
    "secret",
    [
        "postgres://app:hunter2@db.internal/app",
        "https://hooks.example.com/x?token=abc123",
        "-----BEGIN PRIVATE KEY-----",
    ],
)
def test_credential_looking_env_values_are_redacted(
    secret: str, caplog: pytest.LogCaptureFixture
) -> None:
    config = config_with(environment_variables=[env_var("hook", "WEBHOOK_URL", "string")])
    with caplog.at_level(logging.DEBUG, logger="contextadmin_sdk.engine"):
        ctx = build(config, {"WEBHOOK_URL": secret, "CONTEXT_VERBOSE_DEBUG": "1"})
    assert ctx.values["hook"] == "[redacted]"
    entry = ctx.provenance["hook"]
    assert entry["status"] == "resolved"
    assert entry["reason"].startswith("WEBHOOK_URL looks like a credential")
    assert entry["reason"].endswith("replaced by [redacted]")
    assert ctx.warnings == [f"hook: {entry['reason']}"]
    assert secret not in json.dumps(ctx.to_dict())
    assert secret not in caplog.text


def test_a_plain_url_is_kept() -> None:
    config = config_with(environment_variables=[env_var("hook", "WEBHOOK_URL", "string")])
    ctx = build(config, {"WEBHOOK_URL": "https://hooks.example.com/x"})
    assert ctx.values["hook"] == "https://hooks.example.com/x"
    assert ctx.provenance["hook"]["reason"] is None


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("mongodb://root:pw@10.0.0.5/admin", "[redacted]"),
        ({"dsn": "mysql://u:p@h/db", "name": "x"}, "[redacted]"),
        ("A concept overview", "A concept overview"),
    ],
)
def test_credential_looking_database_values_are_redacted(
    value: Any, kept: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fake_fetch(mongo: Any, variables: Any, **_: Any) -> dict[str, Lookup]:
        return {v.name: Lookup("resolved", value, "db.crm.Concepts.Overview") for v in variables}

    monkeypatch.setattr(loader_module, "fetch_database_variables", fake_fetch)
    config = config_with(
        database_name="crm", database_variables=[db_var("overview", "Concepts", "Overview")]
    )
    ctx = build(config, mongo=object())
    assert ctx.values["overview"] == kept
    if kept == "[redacted]":
        assert "looks like a credential" in ctx.provenance["overview"]["reason"]
        assert "mysql://u:p@h" not in json.dumps(ctx.to_dict())
        assert "root:pw" not in json.dumps(ctx.to_dict())


# -- issue 14: a context supplied at start (1, 3) ---------------------------------------------
def _nested_list(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


SUPPLIED_CONFIG = config_with(
    database_name="crm",
    declarative_variables=[
        {"name": "product_tier", "value": "beta"},
        {"name": "max_items", "type": "integer", "value": 25},
    ],
    database_variables=[db_var("overview", "Concepts", "Overview")],
    environment_variables=[
        env_var("monetization_enabled", "MONETIZATION_ENABLED"),
        env_var("beta_features", "BETA_FEATURES"),
    ],
    derived_variables=[derived_var("interview_complete", says("InterviewAgent", "NEXT"))],
    handoffs=[
        {
            "source_agent": "InterviewAgent",
            "target_agent": "Planner",
            "condition": "${monetization_enabled} and ${interview_complete}",
        }
    ],
)


def supplied(context: dict[str, Any], environment: str = "development") -> Any:
    return loader_module.context_from_supplied(
        SUPPLIED_CONFIG,
        context,
        workflow_name="Generator",
        enterprise_id="acme",
        environment=environment,
    )


def test_supplied_context_in_development_keeps_declared_values_with_provenance() -> None:
    ctx = supplied({"monetization_enabled": True, "interview_complete": True, "note": "hi"})
    assert ctx.values == {
        "enterprise_id": "acme",
        "workflow_name": "Generator",
        "interview_complete": True,
        "product_tier": "beta",
        "max_items": 25,
        "monetization_enabled": True,
        "note": "hi",
    }
    assert ctx.provenance["monetization_enabled"] == {
        "category": "environment",
        "source": "MONETIZATION_ENABLED",  # the env var it was read from, as build_context says
        "status": "resolved",
        "reason": "supplied by the runtime at start",
    }
    assert ctx.provenance["note"]["category"] == "supplied"
    assert ctx.provenance["note"]["source"] == "runtime"  # undeclared: nothing else to name
    assert ctx.provenance["product_tier"]["source"] == "static"
    assert ctx.warnings == []


@pytest.mark.parametrize(
    "name", ["monetization_enabled", "beta_features", "context_aware"]
)
def test_production_purges_supplied_environment_variables_visibly(name: str) -> None:
    ctx = supplied({name: True, "interview_complete": True}, "production")
    assert name not in ctx.values
    assert ctx.provenance[name]["status"] == "suppressed"
    assert ctx.provenance[name]["reason"] == "suppressed in production (defensive purge)"
    assert ctx.warnings == [
        f"production: purged environment variables from the supplied context: {name}"
    ]
    # the flags it did not send are visibly suppressed too
    assert ctx.provenance["monetization_enabled"]["status"] == "suppressed"
    assert ctx.provenance["context_aware"]["status"] == "suppressed"


def test_monetization_and_interview_never_hold_in_production() -> None:
    condition = "${monetization_enabled} and ${interview_complete}"
    ctx = supplied({"monetization_enabled": True, "interview_complete": True}, "production")
    assert not evaluate_condition(condition, ctx.values)
    state = RunState(SUPPLIED_CONFIG, ctx, environment="production")
    state.apply(text_event("InterviewAgent", "NEXT"))
    assert not evaluate_condition(condition, state.context)
    dev = supplied({"monetization_enabled": True, "interview_complete": True})
    assert evaluate_condition(condition, dev.values)


def text_event(agent: str, text: str) -> dict[str, Any]:
    return {"type": "agent_text", "agent": agent, "text": text}


@pytest.mark.parametrize(
    ("context", "problem"),
    [
        pytest.param(
            {"max_items": "lots"},
            "context.max_items: declarative variable max_items is a constant: leave it out or "
            "send its declared value 25",
            id="declarative-other-value",
        ),
        pytest.param(
            {"max_items": 25.0},
            "context.max_items: declarative variable max_items is a constant: leave it out or "
            "send its declared value 25",
            id="declarative-other-type",
        ),
        pytest.param(
            {"beta_features": "false"},
            "context.beta_features: takes a boolean (the declared type), got a string",
            id="environment-string-for-boolean",
        ),
        pytest.param(
            {"context_aware": "false"},
            "context.context_aware: takes a boolean (the declared type), got a string",
            id="base-flag-string",
        ),
        pytest.param(
            {"interview_complete": 1},
            "context.interview_complete: takes a boolean (the declared type), got an integer",
            id="derived-integer",
        ),
        pytest.param(
            {"enterprise_id": "other"},
            "context.enterprise_id: must be the run's own enterprise_id ('acme')",
            id="other-enterprise",
        ),
        pytest.param(
            {"note": _nested_list(65)},
            "context.note: nested more than 64 levels",
            id="too-deep",
        ),
        pytest.param(
            {"note": 10**30}, "context.note: must fit in a signed 64-bit integer (JSON "
            "consumers and databases cap it)", id="int-beyond-64-bits",
        ),
        pytest.param(
            {"": 1}, "context.: names are non-empty strings of at most 64", id="empty-name"
        ),
    ],
)
def test_supplied_values_must_have_the_declared_type(
    context: dict[str, Any], problem: str
) -> None:
    with pytest.raises(loader_module.ContextError) as info:
        supplied(context)
    assert info.value.problems == [problem]


def test_supplied_declarative_and_base_values_that_agree_are_accepted() -> None:
    ctx = supplied({"max_items": 25, "enterprise_id": "acme", "workflow_name": "Generator"})
    assert ctx.values["max_items"] == 25


def test_supplied_credentials_are_redacted_and_database_mismatches_kept_with_a_warning() -> None:
    ctx = supplied({"note": "redis://:pw@cache:6379", "overview": 7})
    assert ctx.values["note"] == "[redacted]"
    assert "looks like a credential" in ctx.provenance["note"]["reason"]
    assert ctx.values["overview"] == 7
    assert ctx.warnings == [
        "note: looks like a credential (a URL with userinfo, e.g. a password): "
        "replaced by [redacted]",
        "overview: declared string but the runtime supplied an integer; kept as is",
    ]


def test_supplied_context_refuses_an_unknown_environment() -> None:
    with pytest.raises(ValueError, match="environment: must be one of development, production"):
        supplied({}, "staging")
