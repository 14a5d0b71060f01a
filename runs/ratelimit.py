"""Per-token limits: a token bucket for the request rate, and a count of open ingest sockets.

The bucket holds ``API_RATE_LIMIT_PER_MINUTE`` requests and refills at that many a minute, so a
token may burst up to a minute's worth and then keeps the per-minute pace. It lives in this
process (one Daphne, the embedded default); with ``REDIS_URL`` set it lives in Redis so every
Daphne process draws on the same budget. If Redis fails, this process's own bucket stands in
(a warning is logged) rather than refusing or failing requests, and Redis is not asked again
for ``REDIS_PAUSE_S``: a Redis that never answers costs one request its timeout, not each.

Open ingest sockets are counted per process (``API_MAX_SOCKETS_PER_TOKEN`` applies to each
Daphne process). Limits are documented in docs/reliability.md.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from django.conf import settings

logger = logging.getLogger(__name__)

REDIS_KEY = "contextadmin:ratelimit:{key}"
REDIS_TIMEOUT_S = 0.5
REDIS_WARN_EVERY_S = 30.0
REDIS_PAUSE_S = 2.0  # after a failure, the process's own buckets for this long

# KEYS[1]: the bucket; ARGV: capacity, refill per second. Returns {allowed, retry_after_ms}.
# Redis's own clock, so processes on several machines agree.
_BUCKET_LUA = """
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) + tonumber(now_parts[2]) / 1000000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'stamp')
local tokens = tonumber(state[1]) or capacity
local stamp = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - stamp) * rate)
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'stamp', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / rate * 1000) + 1000)
if allowed == 1 then
  return {1, 0}
end
return {0, math.ceil((1 - tokens) / rate * 1000)}
"""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    retry_after: int = 0  # whole seconds until the next request would be allowed
    limit: int = 0


class LocalBuckets:
    """Token buckets in this process's memory."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, key: str, *, per_minute: int) -> Decision:
        rate = per_minute / 60.0
        now = self.clock()
        with self._lock:
            tokens, stamp = self._buckets.get(key, (float(per_minute), now))
            tokens = min(float(per_minute), tokens + max(0.0, now - stamp) * rate)
            if tokens >= 1:
                self._buckets[key] = (tokens - 1, now)
                return Decision(True, limit=per_minute)
            self._buckets[key] = (tokens, now)
        return Decision(False, max(1, math.ceil((1 - tokens) / rate)), per_minute)

    def clear(self) -> None:
        with self._lock:
            self._buckets.clear()


class RedisBuckets:
    """Token buckets in Redis, shared by every process using the same ``REDIS_URL``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._client = redis.Redis.from_url(
            url, socket_timeout=REDIS_TIMEOUT_S, socket_connect_timeout=REDIS_TIMEOUT_S
        )
        self._script = self._client.register_script(_BUCKET_LUA)

    def take(self, key: str, *, per_minute: int) -> Decision:
        allowed, retry_ms = self._script(
            keys=[REDIS_KEY.format(key=key)], args=[per_minute, per_minute / 60.0]
        )
        if allowed:
            return Decision(True, limit=per_minute)
        return Decision(False, max(1, math.ceil(int(retry_ms) / 1000)), per_minute)


class SocketSlots:
    """Open ingest sockets per token, in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}

    def acquire(self, key: str, *, limit: int) -> bool:
        with self._lock:
            count = self._open.get(key, 0)
            if limit and count >= limit:
                return False
            self._open[key] = count + 1
            return True

    def release(self, key: str) -> None:
        with self._lock:
            count = self._open.get(key, 0) - 1
            if count > 0:
                self._open[key] = count
            else:
                self._open.pop(key, None)

    def count(self, key: str) -> int:
        with self._lock:
            return self._open.get(key, 0)

    def clear(self) -> None:
        with self._lock:
            self._open.clear()


local_buckets = LocalBuckets()
socket_slots = SocketSlots()
_redis_buckets: dict[str, RedisBuckets] = {}
_redis_warned_at = -math.inf
_redis_paused_until = -math.inf


def _buckets() -> LocalBuckets | RedisBuckets:
    url = settings.REDIS_URL
    if not url:
        return local_buckets
    if url not in _redis_buckets:
        _redis_buckets[url] = RedisBuckets(url)
    return _redis_buckets[url]


def request_allow(*, key: str) -> Decision:
    """Take one request from the bucket of ``key`` (e.g. ``token:12``); 0 disables the limit."""
    per_minute = int(settings.API_RATE_LIMIT_PER_MINUTE)
    if per_minute <= 0:
        return Decision(True)
    global _redis_paused_until
    buckets = _buckets()
    if buckets is local_buckets or time.monotonic() < _redis_paused_until:
        return local_buckets.take(key, per_minute=per_minute)
    try:
        return buckets.take(key, per_minute=per_minute)
    except (redis.RedisError, OSError) as exc:  # limit locally rather than fail the request
        _redis_paused_until = time.monotonic() + REDIS_PAUSE_S
        _warn_redis_down(exc)
        return local_buckets.take(key, per_minute=per_minute)


def _warn_redis_down(exc: Exception) -> None:
    global _redis_warned_at
    now = time.monotonic()
    if now - _redis_warned_at >= REDIS_WARN_EVERY_S:
        _redis_warned_at = now
        logger.warning(
            "rate limit: Redis unavailable (%s); limiting per process until it is back",
            type(exc).__name__,
        )


def socket_acquire(*, key: str) -> bool:
    """Count a new ingest socket for ``key``; False when API_MAX_SOCKETS_PER_TOKEN are open."""
    return socket_slots.acquire(key, limit=int(settings.API_MAX_SOCKETS_PER_TOKEN))


def socket_release(*, key: str) -> None:
    """Forget a closed ingest socket of ``key``."""
    socket_slots.release(key)


def reset() -> None:
    """Empty every in-process bucket and socket count (tests)."""
    global _redis_warned_at, _redis_paused_until
    local_buckets.clear()
    socket_slots.clear()
    _redis_warned_at = _redis_paused_until = -math.inf


def token_key(token: Any) -> str:
    """The limit key of an API token."""
    return f"token:{token.pk}"
