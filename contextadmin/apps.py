from django.apps import AppConfig
from django.core.checks import Tags, register


class ContextadminConfig(AppConfig):
    name = "contextadmin"
    verbose_name = "Context definitions"

    def ready(self) -> None:
        # Needs the app registry (a check reads the workflows), so imported here.
        from contextadmin.checks import published_definitions_check, squashed_migrations_check

        # Tags.database: `manage.py migrate` runs them first, on the database it migrates.
        register(squashed_migrations_check, Tags.database)
        register(published_definitions_check, Tags.database)
