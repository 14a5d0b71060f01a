"""The format's name and secret rules (issue 14: items 2, 4 and 10)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from contextadmin_sdk.engine.format import (
    BASE_FLAGS,
    REDACTED_MARKER,
    SECRET_ENV_REASON,
    SERVER_ENV_REASON,
    SERVER_ENV_VARS,
    ConfigError,
    credential_value_reason,
    env_var_problem,
    is_secret_env_var,
    json_nesting_exceeds,
    json_value_problem,
    parse_config,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from .support import config_with, db_var, derived_var, env_var, says

PROJECT = Path(__file__).resolve().parents[3]


# -- 10. secret-holding environment variables -------------------------------------------------
@pytest.mark.parametrize(
    ("env", "reason"),
    [
        # every setting the server itself reads
        ("DATABASE_URL", SERVER_ENV_REASON),
        ("MONGODB_URI", SERVER_ENV_REASON),
        ("REDIS_URL", SERVER_ENV_REASON),
        ("DJANGO_SECRET_KEY", SERVER_ENV_REASON),
        ("ENVIRONMENT", SERVER_ENV_REASON),
        ("API_RATE_LIMIT_PER_MINUTE", SERVER_ENV_REASON),
        # credential patterns
        ("API_KEYS", SECRET_ENV_REASON),
        ("DB_PASS", SECRET_ENV_REASON),
        ("PASSWD", SECRET_ENV_REASON),
        ("CREDENTIALS", SECRET_ENV_REASON),
        ("PRIVATE_KEY_PEM", SECRET_ENV_REASON),
        ("AUTH", SECRET_ENV_REASON),
        ("SENTRY_DSN", SECRET_ENV_REASON),
        ("MYSQL_PWD", SECRET_ENV_REASON),
        ("OPENAI_API_KEY", SECRET_ENV_REASON),
        ("GITHUB_TOKEN", SECRET_ENV_REASON),
        ("STRIPE_SECRET", SECRET_ENV_REASON),
        ("SMTP_PASSWORD", SECRET_ENV_REASON),
        ("GOOGLE_APPLICATION_CREDENTIALS", SECRET_ENV_REASON),
        ("OAUTH_CLIENT", SECRET_ENV_REASON),
        ("KEY", SECRET_ENV_REASON),
        # normal flags
        ("FEATURE_X", None),
        ("CONTEXT_AWARE", None),
        ("MONETIZATION_ENABLED", None),
        ("AUTHOR_NAME", None),
        ("COMPASS_MODE", None),
        ("MONKEY_PATCH", None),
        ("WEBHOOK_URL", None),  # a *_URL name is allowed; its value is checked at read time
        ("MAX_ITEMS", None),
    ],
)
def test_env_var_names_that_may_hold_secrets_are_refused(env: str, reason: str | None) -> None:
    problem = env_var_problem(env)
    if reason is None:
        assert problem is None and not is_secret_env_var(env)
        parse_config(config_with(environment_variables=[env_var("flag", env)]))
        return
    assert problem == f"{env} {reason}"
    assert is_secret_env_var(env)
    with pytest.raises(ConfigError) as info:
        parse_config(config_with(environment_variables=[env_var("flag", env)]))
    assert [(issue.path, issue.message) for issue in info.value.issues] == [
        ("context_variables.environment_variables[0].source.env_var", f"{env} {reason}")
    ]


def _env_names_read_by_the_server() -> set[str]:
    """Every env var name contextadmin reads: env("X"), env.int("X"), Env(X=...), os.environ."""
    names: set[str] = set()
    for path in (PROJECT / "contextadmin").rglob("*.py"):
        source = path.read_text()
        names.update(re.findall(r"\benv(?:\.\w+)?\(\s*\"([A-Z_][A-Z0-9_]*)\"", source))
        names.update(
            re.findall(r"environ(?:\.get|\.setdefault)?[\[(]\s*\"([A-Z_][A-Z0-9_]*)\"", source)
        )
        names.update(re.findall(r"^\s+([A-Z][A-Z0-9_]*)=\(", source, flags=re.MULTILINE))
    return names


def test_server_env_vars_lists_every_setting_the_server_reads() -> None:
    read = _env_names_read_by_the_server()
    assert {"DJANGO_SECRET_KEY", "DATABASE_URL", "REDIS_URL", "MONGODB_URI"} <= read
    assert read - set(BASE_FLAGS.values()) - SERVER_ENV_VARS == set()


@pytest.mark.parametrize(
    ("value", "shape"),
    [
        ("postgres://app:hunter2@db.internal:5432/app", "userinfo"),
        ("mongodb+srv://admin:pw@cluster0.example.net/?retryWrites=true", "userinfo"),
        ("redis://:s3cret@cache:6379/0", "userinfo"),
        ("https://x-access-token:ghs_abc@github.com/org/repo.git", "userinfo"),
        ("https://api.example.com/v1?api_key=abc123", "secret query"),
        ("wss://host/ws?token=abc", "secret query"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE...", "PEM"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "PEM"),
        ("AKIAIOSFODNN7EXAMPLE", "AWS"),
        ("ghp_" + "a" * 36, "GitHub"),
        ("xoxb-1234567890-abcdef", "Slack"),
        ("sk-live-0123456789abcdefghij", "sk-"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig", "JSON Web Token"),
        ("auth failed token=ca_a0ce862d_y5tcQ2v8kLm3Np7rTz1WxYb4", "contextadmin API token"),
        ("ca_not_a_token", None),
        ("https://example.com/path", None),
        ("postgres://db.internal:5432/app", None),
        ("user@example.com", None),
        ("beta", None),
        ("see https://docs.example.com/?page=2&q=tokens", None),
        ("task-abcdefghijklmnopqrstuvwxyz", None),
        ("", None),
    ],
)
def test_credential_looking_values(value: str, shape: str | None) -> None:
    reason = credential_value_reason(value)
    if shape is None:
        assert reason is None
    else:
        assert reason is not None and reason.startswith("looks like a credential")
        assert value not in reason


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(st.text(max_size=200), st.integers(), st.none(), st.booleans()))
def test_credential_check_never_raises(value: Any) -> None:
    credential_value_reason(value)


@pytest.mark.parametrize(
    "text",
    [
        "://" * 50_000,
        "a" * 150_000,
        "eyJ" * 50_000,
        "-----BEGIN " * 15_000,
        "?token" * 25_000,
        "https://" + "a" * 150_000,
        "sk-" * 50_000,
    ],
)
def test_credential_check_is_linear(text: str) -> None:
    started = time.perf_counter()
    credential_value_reason(text)
    assert time.perf_counter() - started < 1.0


def test_the_marker_is_not_itself_a_credential() -> None:
    assert credential_value_reason(REDACTED_MARKER) is None


# -- 2. and 4. names ----------------------------------------------------------------------------
def _name_issues(config: dict[str, Any]) -> list[tuple[str, str]]:
    try:
        parse_config(config)
    except ConfigError as exc:
        return [(issue.path, issue.message) for issue in exc.issues]
    return []


CV = "context_variables"


@pytest.mark.parametrize(
    ("config", "issues"),
    [
        pytest.param(
            config_with(declarative_variables=[{"name": "context_aware", "value": True}]),
            [(f"{CV}.declarative_variables[0].name", "context_aware is a base flag the runtime "
              "reads from CONTEXT_AWARE (and suppresses in production): only an environment "
              "variable may take its name, not a declarative variable")],
            id="declarative-context-aware",
        ),
        pytest.param(
            config_with(declarative_variables=[{"name": "monetization_enabled", "value": True}]),
            [(f"{CV}.declarative_variables[0].name", "monetization_enabled is a base flag the "
              "runtime reads from MONETIZATION_ENABLED (and suppresses in production): only an "
              "environment variable may take its name, not a declarative variable")],
            id="declarative-monetization",
        ),
        pytest.param(
            config_with(derived_variables=[derived_var("context_aware")]),
            [(f"{CV}.derived_variables[0].name", "context_aware is a base flag the runtime "
              "reads from CONTEXT_AWARE (and suppresses in production): only an environment "
              "variable may take its name, not a derived variable")],
            id="derived-base-flag",
        ),
        pytest.param(
            config_with(
                database_name="crm", database_variables=[db_var("context_aware", "C", "f")]
            ),
            [(f"{CV}.database_variables[0].name", "context_aware is a base flag the runtime "
              "reads from CONTEXT_AWARE (and suppresses in production): only an environment "
              "variable may take its name, not a database variable")],
            id="database-base-flag",
        ),
        pytest.param(
            config_with(environment_variables=[env_var("context_aware", "CONTEXT_AWARE")]),
            [],
            id="environment-base-flag-is-the-seed",
        ),
        pytest.param(
            config_with(
                declarative_variables=[{"name": "save_plan", "value": 1}],
                derived_variables=[
                    derived_var("saved", {"type": "tool_response", "tool": "save_plan"})
                ],
            ),
            [(f"{CV}.declarative_variables[0].name", "save_plan is also a tool name: variables "
              "and nodes (agents, tools) must not collide")],
            id="tool-name",
        ),
        pytest.param(
            config_with(
                declarative_variables=[{"name": "planner", "value": 1}],
                derived_variables=[derived_var("done", says("planner", "NEXT"))],
            ),
            [(f"{CV}.declarative_variables[0].name", "planner is also an agent name: variables "
              "and nodes (agents, tools) must not collide")],
            id="agent-name",
        ),
        pytest.param(
            config_with(
                environment_variables=[env_var("writer", "WRITER_ON")],
                derived_variables=[derived_var("done")],
                handoffs=[{"source_agent": "planner", "target_agent": "writer",
                           "condition": "${done}"}],
            ),
            [(f"{CV}.environment_variables[0].name", "writer is also an agent name: variables "
              "and nodes (agents, tools) must not collide")],
            id="handoff-agent",
        ),
    ],
)
def test_names_never_collide_with_nodes_or_base_flags(
    config: dict[str, Any], issues: list[tuple[str, str]]
) -> None:
    assert _name_issues(config) == issues


def test_node_names_lists_agents_and_tools() -> None:
    config = parse_config(
        config_with(
            derived_variables=[
                derived_var("a", says("Interview", "NEXT")),
                derived_var("b", {"type": "tool_response", "tool": "save_plan"}),
            ],
            handoffs=[{"source_agent": "Interview", "target_agent": "Planner",
                       "condition": "${a}"}],
        )
    ).config
    assert config.tool_names() == {"save_plan"}
    assert config.node_names() == {"save_plan": "tool", "Interview": "agent", "Planner": "agent"}


# -- 7. nesting ---------------------------------------------------------------------------------
def _nested(depth: int) -> Any:
    value: Any = 1
    for index in range(depth):
        value = [value] if index % 2 else {"k": value}
    return value


@pytest.mark.parametrize(
    ("depth", "exceeds"), [(0, False), (1, False), (64, False), (65, True), (100_000, True)]
)
def test_json_nesting_is_measured_without_recursion(depth: int, exceeds: bool) -> None:
    value = _nested(depth)
    assert json_nesting_exceeds(value) is exceeds
    assert (json_value_problem(value) is not None) is exceeds


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"a": [1, 2.5, None, True, "x"]}, None),
        (2**63, "must fit in a signed 64-bit integer (JSON consumers and databases cap it)"),
        (10**5000, "must fit in a signed 64-bit integer (JSON consumers and databases cap it)"),
        (float("nan"), "must be a finite number"),
        ({1: "a"}, "object keys must be strings"),
        ({1, 2}, "must be JSON (got set)"),
        (_nested(600), "nested more than 64 levels"),
    ],
    ids=["json", "int64-plus-one", "5000-digits", "nan", "int-keys", "set", "600-deep"],
)
def test_json_value_problem(value: Any, problem: str | None) -> None:
    assert json_value_problem(value) == problem


@pytest.mark.parametrize(
    ("config", "path"),
    [
        pytest.param(
            config_with(declarative_variables=[{"name": "db", "value": "postgres://u:p@h/x"}]),
            f"{CV}.declarative_variables[0].value",
            id="declarative-value",
        ),
        pytest.param(
            config_with(
                environment_variables=[
                    env_var("hook", "WEBHOOK_URL", "string", default="https://x/?token=abc")
                ]
            ),
            f"{CV}.environment_variables[0].default",
            id="environment-default",
        ),
    ],
)
def test_shipped_values_that_look_like_credentials_are_refused(
    config: dict[str, Any], path: str
) -> None:
    issues = _name_issues(config)
    assert len(issues) == 1 and issues[0][0] == path
    assert issues[0][1].startswith("looks like a credential")
    assert "storing secrets in any context variable is an anti-pattern" in issues[0][1]


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("a" * 65, "string should have at most 64 characters"),  # it said "at most 64 items"
        ("", "string should have at least 1 character"),
        ("class", "class is a Python keyword: AG2's ContextExpression cannot reference it"),
        ("Max", "must be lower_snake_case (a-z, 0-9, single underscores, starting with a letter)"),
    ],
)
def test_a_variable_name_out_of_bounds_is_said_as_a_string(name: str, says: str) -> None:
    config = config_with(declarative_variables=[{"name": name, "value": 1}])
    issues = _name_issues(config)
    assert issues[0][0] == f"{CV}.declarative_variables[0].name"
    assert issues[0][1].startswith(says)


@pytest.mark.parametrize("match", [{}, {"trim": False}, {"case_sensitive": True}])
def test_an_agent_text_trigger_needs_text_to_match(match: dict[str, Any]) -> None:
    """An empty ``match.equals`` could never match: a turn's text is reported only when it
    has some."""
    config = config_with(derived_variables=[derived_var("done", says("Interview", "", **match))])
    assert _name_issues(config) == [
        (f"{CV}.derived_variables[0].triggers[0].match.equals",
         "string should have at least 1 character")
    ]


@pytest.mark.parametrize(
    ("equals", "trim", "refused"),
    [(" ", True, True), ("\t\n", True, True), (" ", False, False), (" NEXT ", True, False)],
)
def test_only_whitespace_matches_nothing_once_trimmed(
    equals: str, trim: bool, refused: bool
) -> None:
    config = config_with(
        derived_variables=[derived_var("done", says("Interview", equals, trim=trim))]
    )
    expected = [
        (f"{CV}.derived_variables[0].triggers[0].match",
         "equals: only whitespace, which trim removes: it could never match a turn's text")
    ]
    assert _name_issues(config) == (expected if refused else [])


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"context_variables": {}, "context_variables": {}}',
         "the key 'context_variables' is given twice in one object: keep one"),
        ('{"context_variables": {"declarative_variables": [{"name": "a", "value": 1, '
         '"name": "b"}]}}', "the key 'name' is given twice"),
        ('{"context_variables": {"declarative_variables": [{"name": "a", "type": "integer", '
         '"value": ' + "9" * 5000 + "}]}}", "an integer of 5,000 digits: integers must fit"),
    ],
)
def test_a_file_that_says_a_key_twice_or_an_endless_integer_is_refused(
    text: str, says: str
) -> None:
    """Which of two equal keys a reader keeps is up to the reader: such a file is ambiguous;
    an integer no 64-bit integer can hold is refused before Python converts it."""
    with pytest.raises(ConfigError) as caught:
        parse_config(text)
    assert [issue.path for issue in caught.value.issues] == [""]
    assert says in caught.value.issues[0].message


@pytest.mark.parametrize("option", ["case_sensitive", "trim"])
@pytest.mark.parametrize("given", ["yes", 1, "on", "true", None])
def test_a_match_option_takes_a_boolean_only(option: str, given: Any) -> None:
    """A hand-edited ``"yes"`` or ``1`` is refused, naming the option: it is not read as
    ``true`` (and written back as one) behind the operator's back."""
    trigger = says("Interview", "NEXT", **{option: given})
    config = config_with(derived_variables=[derived_var("done", trigger)])
    issues = _name_issues(config)
    assert [path for path, _ in issues] == [
        f"{CV}.derived_variables[0].triggers[0].match.{option}"
    ]
    assert issues[0][1] == "input should be a valid boolean"
