"""Settings, read once from the environment with django-environ (every setting: docs/deploy.md).

Embedded defaults run everything on one machine: SQLite (WAL), the in-memory channel layer,
and DEBUG on. Production sets DJANGO_DEBUG=0, DJANGO_SECRET_KEY, DATABASE_URL and REDIS_URL.
"""

import os
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import environ
from contextadmin_sdk.engine.format import SERVER_ENV_VARS
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


class ServerEnv(environ.Env):
    """django-environ reading only the names the engine lists as the server's settings.

    ``contextadmin_sdk.engine.format.SERVER_ENV_VARS`` owns that list (a context variable may
    never read one), so a setting added here without being listed there fails at start-up, not
    silently.
    """

    def __init__(self, **scheme: Any) -> None:
        _server_setting_check(names=scheme)
        super().__init__(**scheme)

    def get_value(
        self,
        var: str,
        cast: Any = None,
        default: Any = environ.Env.NOTSET,
        parse_default: bool = False,
    ) -> Any:
        _server_setting_check(names=[var])
        raw = self.ENVIRON.get(var)
        try:
            value = super().get_value(var, cast=cast, default=default, parse_default=parse_default)
        except ImproperlyConfigured:  # not set, and no default
            raise SettingError(var, "required, not set") from None
        except ValueError:  # a number that is not one
            raise SettingError(var, f"{raw!r} is not {_CAST_WORDS.get(cast, 'valid')}") from None
        if raw is not None and cast is float:  # django-environ drops letters: "10ms" is 10.0
            try:
                float(raw)
            except ValueError:
                raise SettingError(var, f"{raw!r} is not a number") from None
        if cast is bool and raw is not None and not _is_bool_word(raw):
            raise SettingError(var, f"{raw!r} is not on/off (1/0, true/false, yes/no)")
        return value

    def db_url(self, var: str = "DATABASE_URL", default: Any = environ.Env.NOTSET,
               engine: Any = None) -> dict[str, Any]:
        """The database settings of a URL; one not of PostgreSQL or SQLite stops start-up (its
        text is not repeated: it may hold a password)."""
        try:
            with warnings.catch_warnings():  # django-environ's warning repeats the password
                warnings.simplefilter("ignore")
                config: dict[str, Any] = super().db_url(var, default=default, engine=engine)
        except (ValueError, KeyError):
            config = {}
        if config.get("ENGINE") not in _DATABASE_ENGINES:
            raise SettingError(var, "not a database URL of ours: postgres://USER:PASSWORD@HOST:"
                                    "5432/NAME or sqlite:////PATH/db.sqlite3")
        return config


class SettingError(SystemExit):
    """A setting the server cannot start with: Daphne, the worker and every ``manage.py``
    command stop at start with one line on stderr naming the setting (no traceback), exit 1."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"contextadmin: {name}: {problem} (docs/deploy.md, Settings)")


_CAST_WORDS = {int: "a whole number", float: "a number"}
_DATABASE_ENGINES = ("django.db.backends.postgresql", "django.db.backends.sqlite3")


def _is_bool_word(text: str) -> bool:
    word = text.strip().lower()
    return word in (*environ.Env.BOOLEAN_TRUE_STRINGS, "false", "off", "no", "n", "0", "") or (
        word.lstrip("-").isdigit()
    )


def _url_scheme_check(name: str, url: str, schemes: tuple[str, ...]) -> None:
    """Refuse a URL setting with another scheme; its text is not repeated (a password)."""
    if url and urlsplit(url).scheme not in schemes:
        raise SettingError(name, f"not a URL of {' / '.join(s + '://' for s in schemes)}")


def _server_setting_check(*, names: Iterable[str]) -> None:
    unlisted = sorted(set(names) - SERVER_ENV_VARS)
    if unlisted:
        raise ImproperlyConfigured(
            f"{', '.join(unlisted)}: not in contextadmin_sdk.engine.format.SERVER_ENV_VARS "
            "(list every setting the server reads there, so no context variable can read it)"
        )


env = ServerEnv()

DEBUG = env.bool("DJANGO_DEBUG", default=True)
SECRET_KEY = env(
    "DJANGO_SECRET_KEY",
    default=(
        "django-insecure-local-development-only-key-change-me-0123456789"
        if DEBUG
        else environ.Env.NOTSET
    ),
)
ALLOWED_HOSTS = env.list(
    "DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]", "testserver"]
)
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

# Not "daphne": the app only makes `runserver` serve ASGI, and it imports Twisted into every
# manage.py process (a third of each command's start). Serve with Daphne (scripts/run).
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "nested_admin",
    "reversion",
    "contextadmin",
    "runs",
    "runs.webhooks",  # before django_tasks_db: its db_worker keeps the periodic tick scheduled
    "django_tasks",
    "django_tasks_db",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "contextadmin.middleware.RejectNulMiddleware",  # PostgreSQL cannot store NUL
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "contextadmin.middleware.SyncChainMiddleware",  # last: one thread hop for the chain (ASGI)
]

ROOT_URLCONF = "contextadmin.urls"
ASGI_APPLICATION = "contextadmin.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers (inspector sockets) run beside the ingest writer; IMMEDIATE avoids
    # lock-upgrade deadlocks between concurrent writers.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    # A file, not memory, so live-server tests (Daphne in a child process) share it; one per
    # test process, so concurrent test runs never share a database.
    DATABASES["default"]["TEST"] = {
        "NAME": env(
            "DJANGO_TEST_DATABASE", default=str(BASE_DIR / "var" / f"test-db-{os.getpid()}.sqlite3")
        )
    }
elif env.bool("DATABASE_POOL", default=True):
    # PostgreSQL through Django's connection pool (psycopg_pool; docs/deploy.md): under ASGI
    # every request runs in a new thread, so without it each request opened a connection.
    # The pool keeps the connections, so Django's persistent connections must be off.
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True  # the pool checks each one it hands out
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": env.int("DATABASE_POOL_MIN_SIZE", default=2),
        "max_size": env.int("DATABASE_POOL_MAX_SIZE", default=20),
        "timeout": env.float("DATABASE_POOL_TIMEOUT_S", default=10.0),
        "max_idle": env.float("DATABASE_POOL_MAX_IDLE_S", default=600.0),
        "max_lifetime": 3600.0,
    }
else:  # DATABASE_POOL=0: Django's persistent connections, one per thread
    DATABASES["default"].setdefault("CONN_MAX_AGE", 60)
    DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env.str("REDIS_URL", default="")
_url_scheme_check("REDIS_URL", REDIS_URL, ("redis", "rediss", "unix"))
# Messages a channel may hold before the layer drops more: bounds a stalled inspector's memory
# (the in-memory and the "lists" layer). A dropped message costs nothing lasting: inspectors
# refill gaps from the log by seq.
CHANNEL_LAYER_CAPACITY = env.int("CHANNEL_LAYER_CAPACITY", default=200)
# With REDIS_URL, how Daphne processes exchange group messages (docs/deploy.md), both layers
# as channels_redis ships them: "pubsub" (RedisPubSubChannelLayer: one PUBLISH per broadcast,
# each process fans out to its own sockets) or "lists" (RedisChannelLayer: one stored copy per
# member channel, bounded by CHANNEL_LAYER_CAPACITY).
REDIS_CHANNEL_LAYER = env.str("REDIS_CHANNEL_LAYER", default="pubsub")
if REDIS_CHANNEL_LAYER not in ("pubsub", "lists"):
    raise SettingError(
        "REDIS_CHANNEL_LAYER", f"{REDIS_CHANNEL_LAYER!r}, expected 'pubsub' or 'lists'"
    )
# redis-py >= 6 reads with a 5 s socket timeout by default, the same 5 s a consumer blocks in
# BZPOPMIN ("lists"): an idle socket's consumer then dies with "Timeout reading". A longer
# timeout (a URL's ?socket_timeout= still wins) keeps it alive.
_REDIS_HOSTS = [{"address": REDIS_URL, "socket_timeout": 30}]
if REDIS_URL and REDIS_CHANNEL_LAYER == "pubsub":
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {"hosts": _REDIS_HOSTS},
        }
    }
elif REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": _REDIS_HOSTS, "capacity": CHANNEL_LAYER_CAPACITY, "expiry": 30},
        }
    }
else:
    CHANNEL_LAYERS = {
        "default": {  # channels' in-memory layer, swept at most once a second (B11)
            "BACKEND": "runs.channels_overrides.SweptInMemoryChannelLayer",
            "CONFIG": {
                "capacity": CHANNEL_LAYER_CAPACITY,
                "expiry": 30,
                "sweep_every_s": env.float("CHANNEL_LAYER_SWEEP_S", default=1.0),
            },
        }
    }

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
FORMAT_MODULE_PATH = ["contextadmin.formats"]  # times as the inspector writes them, in UTC
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

LOGIN_URL = "admin:login"

# Size limits (documented in docs/reliability.md).
API_MAX_BODY_BYTES = env.int("API_MAX_BODY_BYTES", default=1_048_576)
DATA_UPLOAD_MAX_MEMORY_SIZE = FILE_UPLOAD_MAX_MEMORY_SIZE = API_MAX_BODY_BYTES
# A workflow page posts ~10 fields per variable; the byte limit above still bounds the request.
DATA_UPLOAD_MAX_NUMBER_FIELDS = 100_000
API_MAX_EVENTS_PER_BATCH = env.int("API_MAX_EVENTS_PER_BATCH", default=1000)
# Per API token (0 disables each): runs not yet ended, open ingest sockets per Daphne process,
# and a token bucket of requests (HTTP API calls and socket connects), shared through Redis
# when REDIS_URL is set (runs/ratelimit.py).
API_MAX_RUNNING_RUNS_PER_TOKEN = env.int("API_MAX_RUNNING_RUNS_PER_TOKEN", default=1000)
API_MAX_SOCKETS_PER_TOKEN = env.int("API_MAX_SOCKETS_PER_TOKEN", default=200)
# An ingest socket holds at most this many bytes of frames not yet ingested (4 of the largest
# batch): a client that sends without waiting for its acks is refused (4429), not buffered.
API_MAX_SOCKET_BACKLOG_BYTES = 4 * API_MAX_BODY_BYTES
API_RATE_LIMIT_PER_MINUTE = env.int("API_RATE_LIMIT_PER_MINUTE", default=60_000)
# An events POST is refused (503, Retry-After) while the oldest POST this process holds has
# waited longer than this, so an overload sheds requests instead of queueing past the
# runtimes' timeouts (runs/shedding.py; 0 never sheds).
API_EVENTS_SHED_AFTER_S = env.float("API_EVENTS_SHED_AFTER_S", default=2.0)

# Runs: a running run with no event for this many seconds shows as stale (the inspector);
# prune_runs deletes ended runs older than this many days unless --older-than says otherwise.
RUNS_STALE_AFTER_S = env.int("RUNS_STALE_AFTER_S", default=300)
RUNS_RETENTION_DAYS = env.int("RUNS_RETENTION_DAYS", default=30)

# Webhooks (docs/webhooks.md): sent by `manage.py db_worker` processes (django-tasks with its
# database backend: the task queue is a table of the same database, no new server).
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
# Targets: https only, and no loopback, private or link-local address, unless allowed.
WEBHOOKS_ALLOW_HTTP = env.bool("WEBHOOKS_ALLOW_HTTP", default=False)
WEBHOOKS_ALLOW_PRIVATE = env.bool("WEBHOOKS_ALLOW_PRIVATE", default=False)
WEBHOOKS_CONNECT_TIMEOUT_S = env.float("WEBHOOKS_CONNECT_TIMEOUT_S", default=5.0)
WEBHOOKS_READ_TIMEOUT_S = env.float("WEBHOOKS_READ_TIMEOUT_S", default=10.0)
# Retries: the first after this delay, x4 each time, until RETRY_FOR_S; then the delivery fails.
WEBHOOKS_BACKOFF_BASE_S = env.float("WEBHOOKS_BACKOFF_BASE_S", default=5.0)
WEBHOOKS_RETRY_FOR_S = env.float("WEBHOOKS_RETRY_FOR_S", default=86_400.0)
# The periodic task (stale runs, missed deliveries); a subscription failing this long: off.
WEBHOOKS_TICK_S = env.float("WEBHOOKS_TICK_S", default=10.0)
WEBHOOKS_DISABLE_AFTER_DAYS = env.int("WEBHOOKS_DISABLE_AFTER_DAYS", default=5)
# Payload links to run pages start with this.
WEBHOOKS_SITE_URL = env.str("WEBHOOKS_SITE_URL", default="http://127.0.0.1:8000").rstrip("/")

# The context engine's inputs (seed 000 "Runtime Loading").
ENVIRONMENT = env.str("ENVIRONMENT", default="development")
CONTEXT_INCLUDE_SCHEMA = env.str("CONTEXT_INCLUDE_SCHEMA", default="")
CONTEXT_VERBOSE_DEBUG = env.bool("CONTEXT_VERBOSE_DEBUG", default=False)
MONGODB_URI = env.str("MONGODB_URI", default="")
_url_scheme_check("MONGODB_URI", MONGODB_URI, ("mongodb", "mongodb+srv"))
MONGODB_TIMEOUT_MS = env.int("MONGODB_TIMEOUT_MS", default=2000)

# Publish with review (docs/versions.md): "off" publishes every save at once; "on" keeps a save
# a draft until a different staff user approves it.
CONTEXTADMIN_REVIEW = env.str("CONTEXTADMIN_REVIEW", default="off").strip().lower()
if CONTEXTADMIN_REVIEW not in ("off", "on"):
    raise SettingError(
        "CONTEXTADMIN_REVIEW", f"{CONTEXTADMIN_REVIEW!r}, expected 'off' or 'on'"
    )

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if not DEBUG:
    # HTTPS by default; DJANGO_SECURE_SSL=0 only behind a proxy that redirects itself, or in tests.
    SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL", default=True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

_log_level = env.str("DJANGO_LOG_LEVEL", default="INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "filters": {"shed_requests": {"()": "runs.shedding.ShedRequestsFilter"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "django.request": {"filters": ["shed_requests"]},
        "contextadmin": {"level": _log_level},
        "runs": {"level": _log_level},
        "contextadmin_sdk": {"level": _log_level},
    },
}
