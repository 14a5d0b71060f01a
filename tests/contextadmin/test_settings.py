"""Settings read from the environment that pick an implementation, checked in a real
``manage.py`` process (settings are read once, at start)."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from contextadmin.settings import ServerEnv
from devservers.processes import manage, server_env

LAYER_OF = "from django.conf import settings; print(settings.CHANNEL_LAYERS['default']['BACKEND'])"


@pytest.mark.parametrize(
    ("choice", "backend"),
    [
        (None, "channels_redis.pubsub.RedisPubSubChannelLayer"),
        ("pubsub", "channels_redis.pubsub.RedisPubSubChannelLayer"),
        ("lists", "channels_redis.core.RedisChannelLayer"),
    ],
)
def test_redis_channel_layer_setting_picks_the_layer(tmp_path, choice, backend):
    extra = {"REDIS_URL": "redis://127.0.0.1:6399/0"}
    if choice is not None:
        extra["REDIS_CHANNEL_LAYER"] = choice
    env = server_env(f"sqlite:///{tmp_path / 'db.sqlite3'}", **extra)
    assert manage(env, "shell", "-c", LAYER_OF).stdout.strip().splitlines()[-1] == backend


def test_an_unknown_redis_channel_layer_is_refused_by_name(tmp_path):
    env = server_env(f"sqlite:///{tmp_path / 'db.sqlite3'}", REDIS_CHANNEL_LAYER="kafka")
    result = manage(env, "check", check=False)
    assert result.returncode != 0
    assert "REDIS_CHANNEL_LAYER: 'kafka', expected 'pubsub' or 'lists'" in result.stderr


@pytest.mark.parametrize("name", ["DJANGO_NEW_SETTING", "CONTEXT_AWARE", "OPENAI_API_KEY"])
def test_settings_read_only_the_names_the_engine_lists_as_server_settings(name):
    """The engine's SERVER_ENV_VARS is the one list: a setting read without being listed there
    (so a context variable could read it) stops the server at start-up."""
    with pytest.raises(ImproperlyConfigured, match=name):
        ServerEnv().str(name, default="")
    with pytest.raises(ImproperlyConfigured, match=name):
        ServerEnv(**{name: (str, "")})
    assert ServerEnv().str("REDIS_URL", default="fallback") is not None


def test_every_server_setting_has_a_row_in_the_deploy_docs_settings_table():
    """docs/deploy.md says its Settings table lists every setting: each name the server may read
    (the engine's SERVER_ENV_VARS) has a row, but Django's own: the settings module and
    ``createsuperuser``'s ``DJANGO_SUPERUSER_*`` (the README's run command uses them)."""
    import re

    from contextadmin_sdk.engine.format import SERVER_ENV_VARS

    from devservers.processes import PROJECT

    deploy = (PROJECT / "docs" / "deploy.md").read_text()
    table = deploy[deploy.index("## Settings") :]
    rows = set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", table, re.MULTILINE))
    elsewhere = {"DJANGO_SETTINGS_MODULE"} | {
        f"DJANGO_SUPERUSER_{part}" for part in ("USERNAME", "PASSWORD", "EMAIL")
    }
    assert sorted(SERVER_ENV_VARS - elsewhere - rows) == []
    assert sorted(rows - SERVER_ENV_VARS) == []  # a row for a setting nothing reads
