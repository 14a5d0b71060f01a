from django.apps import AppConfig
from django.core.checks import Tags, register

from contextadmin.checks import published_definitions_check, squashed_migrations_check


class ContextadminConfig(AppConfig):
    name = "contextadmin"
    verbose_name = "Context definitions"

    def ready(self) -> None:
        # Tags.database: `manage.py migrate` runs it first, on the database it migrates.
        register(squashed_migrations_check, Tags.database)
        register(published_definitions_check, Tags.database)
