"""The format's names, limits and vocabularies: the one place each is stated (docs/format.md).

Categories, environments, name and env-var patterns, the run-id rule, the state budget's limits,
the server's own env-var names and the shapes of credentials: every other module reads them here.
"""

from __future__ import annotations

import re

# -- limits and vocabularies (documented in docs/format.md) ----------------------------------
NAME_MAX_CHARS = 64
DESCRIPTION_MAX_CHARS = 2_000
DECLARATIVE_VALUE_MAX_CHARS = 1_000  # seed 000: "keep values small (avoid large blobs)"
IDENTIFIER_MAX_CHARS = 200  # agent, tool, collection, field and database names
MATCH_TEXT_MAX_CHARS = 1_000
MAX_VARIABLES = 5_000  # over all four categories of one workflow
MAX_TRIGGERS_PER_VARIABLE = 100
MAX_HANDOFFS = 1_000
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT64_MESSAGE = "must fit in a signed 64-bit integer (JSON consumers and databases cap it)"
ENTERPRISE_ID_MAX_CHARS = 200  # a run's enterprise id (runs.Run.enterprise_id holds as many)
# A run id (runs.Run.id holds 64): the one rule for every place that takes one (run start,
# import, the API's and the sockets' paths), checked before a run id reaches SQL, a log line
# or a channel-layer group name (whose names allow at most 100 ASCII characters).
RUN_ID_MAX_CHARS = 64
RUN_ID_REGEX = rf"[A-Za-z0-9_-]{{1,{RUN_ID_MAX_CHARS}}}"
RUN_ID_PATTERN = re.compile(rf"^{RUN_ID_REGEX}\Z")  # .match() is whole-string
RUN_ID_RULE = f"1-{RUN_ID_MAX_CHARS} characters of A-Z, a-z, 0-9, _ and -"
DIGEST_REGEX = r"^sha256:[0-9a-f]{64}$"  # an export's digest: "sha256:" and 64 hex digits


def run_id_valid(value: object) -> bool:
    """Whether ``value`` is a run id a run could have (``RUN_ID_RULE``)."""
    return isinstance(value, str) and RUN_ID_PATTERN.fullmatch(value) is not None


def enterprise_id_problem(value: object) -> str | None:
    """What is wrong with ``value`` as a run's enterprise id (None: nothing): the one rule of
    the run start, a run's import and the preview. Any script; no control or formatting
    character (a newline would forge log lines, a bidi override reorder what pages show)."""
    if not isinstance(value, str) or not value.strip():
        return "required (a non-empty string)"
    if len(value) > ENTERPRISE_ID_MAX_CHARS:
        return f"at most {ENTERPRISE_ID_MAX_CHARS} characters"
    if not value.isprintable():
        return (
            "letters, digits, spaces and punctuation only (no control or formatting "
            "characters: newlines, tabs, bidi overrides)"
        )
    return None

CATEGORIES: tuple[str, ...] = ("declarative", "database", "environment", "derived")
CATEGORY_KEYS: dict[str, str] = {c: f"{c}_variables" for c in CATEGORIES}
RESERVED_NAMES = frozenset({"enterprise_id", "workflow_name"})  # the minimal base context
LEGACY_KEYS = ("variables",)

ENVIRONMENTS: tuple[str, ...] = ("development", "production")
NAME_PATTERN = r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$"
ENV_VAR_PATTERN = r"^[A-Z_][A-Z0-9_]*$"
# The minimal base context's two baked-in flags (seed 000 step 1), and the env vars they read.
# Only an environment variable may take one of these names (docs/format.md).
BASE_FLAGS: dict[str, str] = {
    "context_aware": "CONTEXT_AWARE",
    "monetization_enabled": "MONETIZATION_ENABLED",
}
JSON_MAX_DEPTH = 64  # nesting of any JSON value the engine takes in (events, contexts, templates)
# A run's state budget (sdk/contextadmin_sdk/engine/state.py; docs/reliability.md "a run's state is
# bounded").
# The state is rewritten after every batch, so it holds previews, never blobs: the full text of
# every output stays in the event log (the node's "seq" says which event).
NODE_TEXT_MAX_CHARS = 1_000  # an agent's last text kept in nodes; longer: a preview this long
NODE_DATA_MAX_BYTES = 2_000  # a tool's last response (as JSON); larger: a preview this long
STATE_MAX_NODES = 500  # distinct agents and tools a run's state tracks (nodes, visited agents)
PATH_MAX_EDGES = 1_000  # hand-off edges kept in execution.path (the latest; each has its seq)
RESUMES_MAX = 100  # resume points kept in execution.resumes (the latest; each has its seq)
UNRESOLVED_REASON_MAX_CHARS = 500  # a runtime's reason it could not read a variable (at start)
# Seed 004's namespaces of a run's state; an output mapping writes the last two (docs/format.md
# "outputs"), and no variable, agent or tool takes their names ({{agent.…}} reads the state).
STATE_NAMESPACES: tuple[str, ...] = ("context", "nodes", "execution", "agent", "world")
OUTPUT_NAMESPACES: tuple[str, ...] = ("agent", "world")
MAX_OUTPUTS = 200  # output mappings of one workflow (each writes one distinct path)
STATE_PATH_MAX_CHARS = 200  # an output mapping's target path, namespace included
STATE_PATH_MAX_KEYS = 16  # keys after the namespace
OUTPUT_VALUE_MAX_BYTES = 2_000  # a mapped value (as JSON) kept in the state; larger: not written
EXCHANGES_MAX = 200  # speaker pairs counted in execution.exchanges (the first ones; then no more)
ENV_VALUE_MAX_CHARS = 1_000  # seed 000: env vars are "small booleans or short scalars"
ENV_NUMBER_MAX_CHARS = 100  # an integer/number literal longer than this is not a flag value

# Every setting the server itself reads from the environment (contextadmin/settings.py and the
# management commands; a test keeps this list in step with settings.py). A context variable
# never reads one: they hold the server's credentials (DATABASE_URL, MONGODB_URI...) or tune it.
# The base flags CONTEXT_AWARE and MONETIZATION_ENABLED are the seed's own feature flags, not
# server settings, so they stay readable.
SERVER_ENV_VARS: frozenset[str] = frozenset({
    "API_EVENTS_SHED_AFTER_S",
    "API_MAX_BODY_BYTES",
    "API_MAX_EVENTS_PER_BATCH",
    "API_MAX_RUNNING_RUNS_PER_TOKEN",
    "API_MAX_SOCKETS_PER_TOKEN",
    "API_RATE_LIMIT_PER_MINUTE",
    "CHANNEL_LAYER_CAPACITY",
    "CHANNEL_LAYER_SWEEP_S",
    "CONTEXTADMIN_REVIEW",
    "CONTEXT_INCLUDE_SCHEMA",
    "CONTEXT_VERBOSE_DEBUG",
    "DATABASE_POOL",
    "DATABASE_POOL_MAX_IDLE_S",
    "DATABASE_POOL_MAX_SIZE",
    "DATABASE_POOL_MIN_SIZE",
    "DATABASE_POOL_TIMEOUT_S",
    "DATABASE_URL",
    "DJANGO_ALLOWED_HOSTS",
    "DJANGO_CSRF_TRUSTED_ORIGINS",
    "DJANGO_DEBUG",
    "DJANGO_HSTS_SECONDS",
    "DJANGO_LOG_LEVEL",
    "DJANGO_SECRET_KEY",
    "DJANGO_SECURE_SSL",
    "DJANGO_SETTINGS_MODULE",
    "DJANGO_SUPERUSER_EMAIL",
    "DJANGO_SUPERUSER_PASSWORD",
    "DJANGO_SUPERUSER_USERNAME",
    "DJANGO_TEST_DATABASE",
    "ENVIRONMENT",
    "MONGODB_TIMEOUT_MS",
    "MONGODB_URI",
    "REDIS_CHANNEL_LAYER",
    "REDIS_URL",
    "RUNS_RETENTION_DAYS",
    "RUNS_STALE_AFTER_S",
    "WEBHOOKS_ALLOW_HTTP",
    "WEBHOOKS_ALLOW_PRIVATE",
    "WEBHOOKS_BACKOFF_BASE_S",
    "WEBHOOKS_CONNECT_TIMEOUT_S",
    "WEBHOOKS_DISABLE_AFTER_DAYS",
    "WEBHOOKS_READ_TIMEOUT_S",
    "WEBHOOKS_RETRY_FOR_S",
    "WEBHOOKS_SITE_URL",
    "WEBHOOKS_TICK_S",
})
# Credential-shaped env var names. Substrings for words that never occur by accident
# (SECRET, TOKEN, PASSWORD, PASSWD, CREDENTIAL, PRIVATE); whole ``_``-separated words for short
# ones that do (PASS would refuse COMPASS, AUTH would refuse AUTHOR, KEY would refuse MONKEY).
_SECRET_ENV_SUBSTRINGS = re.compile(r"SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|PRIVATE")
_SECRET_ENV_WORDS = frozenset({
    "KEY", "KEYS", "APIKEY", "PASS", "PWD", "AUTH", "OAUTH", "AUTHORIZATION", "DSN", "CREDS",
    "PASSPHRASE", "COOKIE", "CERT", "PEM",
})
SECRET_ENV_REASON = (  # a message about secrets, not one
    "looks like a secret: storing secrets in any context variable is an anti-pattern "  # noqa: S105
    "(use a secure secret manager; never echo secret env vars here)"
)
SERVER_ENV_REASON = (
    "is a setting of this server (contextadmin/settings.py), which may hold its credentials: "
    "it never enters a context"
)

# This product's API tokens, ca_<8 hex: the prefix shown in the admin>_<secret> (the server's
# runs/tokens.py makes and checks them; a value of this shape is a credential).
API_TOKEN_PATTERN = r"ca_([0-9a-f]{8})_[A-Za-z0-9_-]{20,100}"  # noqa: S105  (a shape, not a secret)
# What a credential-looking value is replaced by when read (loader, supplied contexts).
REDACTED_MARKER = "[redacted]"
# Each pattern is anchored on a literal and uses only bounded or separator-stopped repeats, so a
# scan is linear in the text whatever it holds.
_URL_AUTHORITY = re.compile(r"://([^\s/?#]*)")
_SECRET_QUERY = re.compile(
    r"[?&;](?:password|passwd|pwd|pass|secret|token|access_token|api_key|apikey|key|auth"
    r"|client_secret|sig|signature)=[^&\s]", re.IGNORECASE,
)
_CREDENTIAL_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"-----BEGIN [A-Z0-9 ]{0,64}-----"), "a PEM block"),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), "an AWS access key id"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36}"), "a GitHub token"),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10}"), "a Slack token"),
    (re.compile(r"\bsk-(?:live-|proj-|ant-)?[A-Za-z0-9_-]{20}"), "an API secret key (sk-...)"),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,200}\.eyJ[A-Za-z0-9_-]{8}"), "a JSON Web Token"),
    (re.compile(rf"\b{API_TOKEN_PATTERN}"), "a contextadmin API token"),
)
