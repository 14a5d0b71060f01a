"""Date formats: the admin writes times as the inspector pages do (one form, in UTC, saying so)."""
