"""The context engine: pure Python (no Django), embeddable in any agent runtime.

See docs/engine.md. The public API is re-exported here; docs/engine.md's *API* is its contract.
"""

from .coercion import coerce_env, env_flag, is_production, redact_credentials
from .conditions import (
    ConditionError,
    condition_names,
    evaluate_condition,
    handoffs_readiness,
    validate_condition,
)
from .config import ConfigInput, load_config
from .context import Context, ContextError
from .derived import TRIGGER_LOADERS, DerivedContextManager, DerivedTrigger, Flip
from .events import (
    EVENT_TYPES,
    RUN_STATUSES,
    TEXT_MAX_CHARS,
    WARNING_RULES,
    event_sender,
    validate_event,
)
from .format import (
    BASE_FLAGS,
    ENVIRONMENTS,
    JSON_MAX_DEPTH,
    REDACTED_MARKER,
    SERVER_ENV_VARS,
    credential_value_reason,
    env_var_problem,
    is_secret_env_var,
)
from .loader import build_context
from .log import PREVIEW_MAX_CHARS, preview, replaying
from .mongo import Lookup, fetch_database_variables, json_safe, mongo_client
from .resolver import (
    LintIssue,
    Resolution,
    TemplateError,
    lint_templates,
    resolve,
    resolve_json,
    resolve_system_message,
)
from .state import (
    RUN_ENDED_STATUSES,
    RUN_TRANSITIONS,
    Applied,
    EventError,
    Refusal,
    RunEnded,
    RunState,
    SeqError,
    context_set_problem,
    context_set_refusal,
    replay,
    run_status_problem,
)
from .supplied import context_from_supplied

__all__ = [
    "BASE_FLAGS",
    "ENVIRONMENTS",
    "EVENT_TYPES",
    "JSON_MAX_DEPTH",
    "PREVIEW_MAX_CHARS",
    "REDACTED_MARKER",
    "RUN_ENDED_STATUSES",
    "RUN_STATUSES",
    "RUN_TRANSITIONS",
    "SERVER_ENV_VARS",
    "TEXT_MAX_CHARS",
    "TRIGGER_LOADERS",
    "WARNING_RULES",
    "Applied",
    "ConditionError",
    "ConfigInput",
    "Context",
    "ContextError",
    "DerivedContextManager",
    "DerivedTrigger",
    "EventError",
    "Flip",
    "LintIssue",
    "Lookup",
    "Refusal",
    "Resolution",
    "RunEnded",
    "RunState",
    "SeqError",
    "TemplateError",
    "build_context",
    "coerce_env",
    "condition_names",
    "context_from_supplied",
    "context_set_problem",
    "context_set_refusal",
    "credential_value_reason",
    "env_flag",
    "env_var_problem",
    "evaluate_condition",
    "event_sender",
    "fetch_database_variables",
    "handoffs_readiness",
    "is_production",
    "is_secret_env_var",
    "json_safe",
    "lint_templates",
    "load_config",
    "mongo_client",
    "preview",
    "redact_credentials",
    "replay",
    "replaying",
    "resolve",
    "resolve_json",
    "resolve_system_message",
    "run_status_problem",
    "validate_condition",
    "validate_event",
]
