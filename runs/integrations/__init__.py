"""Adapters that attach contextadmin's engine and reporter to agent runtimes (``ag2``)."""
