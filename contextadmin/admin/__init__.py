"""The admin of the definitions: the workflow page (``workflow``, with its ``versions`` and
``imports`` pages as mixins), its ``inlines``, and the read-only ``lists``. Django's admin
autodiscovery imports this package, which registers them."""

from contextadmin.admin import lists, workflow  # noqa: F401  (each registers its admins)
