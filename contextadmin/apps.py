from django.apps import AppConfig


class ContextadminConfig(AppConfig):
    name = "contextadmin"
    verbose_name = "Context definitions"
