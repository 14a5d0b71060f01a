"""The context engine: pure Python (no Django), embeddable in any agent runtime.

See docs/engine.md. The public API is re-exported here; DESIGN.md §5 is its contract.
"""

from .conditions import (
    ConditionError,
    condition_names,
    evaluate_condition,
    handoffs_readiness,
    validate_condition,
)
from .config import ConfigInput, load_config
from .derived import TRIGGER_LOADERS, DerivedContextManager, DerivedTrigger, Flip
from .events import EVENT_TYPES, RUN_STATUSES, TEXT_MAX_CHARS, event_sender, validate_event
from .loader import Context, build_context, coerce_env, env_flag, is_production
from .log import PREVIEW_MAX_CHARS, preview
from .mongo import Lookup, fetch_database_variables, json_safe, mongo_client
from .resolver import (
    LintIssue,
    Resolution,
    lint_templates,
    resolve,
    resolve_json,
    resolve_system_message,
)
from .state import Applied, EventError, RunState, SeqError, replay

__all__ = [
    "EVENT_TYPES",
    "PREVIEW_MAX_CHARS",
    "RUN_STATUSES",
    "TEXT_MAX_CHARS",
    "TRIGGER_LOADERS",
    "Applied",
    "ConditionError",
    "ConfigInput",
    "Context",
    "DerivedContextManager",
    "DerivedTrigger",
    "EventError",
    "Flip",
    "LintIssue",
    "Lookup",
    "Resolution",
    "RunState",
    "SeqError",
    "build_context",
    "coerce_env",
    "condition_names",
    "env_flag",
    "evaluate_condition",
    "event_sender",
    "fetch_database_variables",
    "handoffs_readiness",
    "is_production",
    "json_safe",
    "lint_templates",
    "load_config",
    "mongo_client",
    "preview",
    "replay",
    "resolve",
    "resolve_json",
    "resolve_system_message",
    "validate_condition",
    "validate_event",
]
