"""Signals the definitions app sends, for apps above it (runs) to receive.

``version_published``: a workflow's version was published (saved with review off, or
approved), sent inside the publishing transaction with ``workflow`` and ``version``. The
webhooks' outbox (``runs.webhooks``) writes its deliveries in that same transaction, so
contextadmin never imports runs.
"""

from django.dispatch import Signal

version_published = Signal()
