"""Report a run to a contextadmin server: ``RunReporter`` (blocking, or in the background with
a spool), the published definitions with ETag caching, and what a refused start is told."""

from .definitions import DefinitionsError, runtime_info, sdk_version
from .reporter import RunReporter
from .resume import Resumed
from .transport import ReportError

__all__ = [
    "DefinitionsError", "ReportError", "Resumed", "RunReporter", "runtime_info", "sdk_version",
]
