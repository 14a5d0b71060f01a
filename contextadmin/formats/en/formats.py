# Django's English formats ("Nov. 25, 2026, 6:43 a.m.") replaced by the form every page of the
# product uses: "2026-11-25 06:43:31 UTC" (T: the active time zone's name; TIME_ZONE is UTC).
DATETIME_FORMAT = "Y-m-d H:i:s T"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s T"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
