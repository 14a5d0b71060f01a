"""The ASGI application with the group commit's rounds capped at one request (B11.post's
baseline): every events POST commits in a transaction of its own, as before the POST joined
the group commit; everything else is the application as shipped.

``daphne bench.ungrouped_asgi:application``. ``GroupCommitter`` always takes at least one
request a round, and a process's committer is made at its first use, reading the cap then.
"""

from contextadmin.asgi import application
from runs import batching

batching.GROUP_COMMIT_MAX_EVENTS = 1

__all__ = ["application"]
