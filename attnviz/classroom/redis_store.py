"""Class polls in Redis, so that every replica behind the load balancer sees the same polls.

Keys, under a prefix (``attnviz`` by default); ``{CODE}`` is a Redis hash tag, so one poll's
keys would stay on one node of a cluster:

    attnviz:poll:{CODE}       hash: the poll's fields (question JSON, sealed key, salt, secret's
                              SHA-256, phase, round, shown, max_answers, expires_ms)
    attnviz:poll:{CODE}:r1    hash: salted session id -> encoded answer, round 1 (and :r2)
    attnviz:polls             sorted set: code -> expiry (ms), to count live polls for the cap

Every key expires with its poll (PEXPIREAT, from Redis's own clock, so replicas agree). Each
change is one Lua script, atomic in Redis: an answer is checked against the poll's phase,
round and cap and written with one HSET of its salted session (one answer per session per
round; a second overwrites the first, so nothing is lost or counted twice, however many
replicas write at once); a state change is a compare-and-set on (phase, round, shown).

Redis that goes away: short socket timeouts and one retry (a pooled connection left over from
before a Redis restart fails once, then reconnects), then the store returns "unavailable".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, cast

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from attnviz.classroom.polls import Limits, PollState, PollStore, PutOutcome, SwapOutcome

# Socket timeouts: a Redis that stops answering costs a page at most about this much per
# attempt (two attempts), rather than hanging the student's script run.
TIMEOUT_SECONDS = 0.5

_CREATE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('EXISTS', KEYS[2]) == 1 then return 'taken' end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 'full' end
local expires = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[2], 'expires_ms', expires, unpack(ARGV, 4))
redis.call('PEXPIREAT', KEYS[2], expires)
redis.call('ZADD', KEYS[1], expires, ARGV[1])
if redis.call('PEXPIRETIME', KEYS[1]) < expires then
  redis.call('PEXPIREAT', KEYS[1], expires)
end
return 'ok'
"""

_ANSWER = """
local m = redis.call('HMGET', KEYS[1], 'phase', 'round', 'expires_ms', 'max_answers')
if not m[1] then return 'unknown' end
if m[1] == 'revealed' or m[1] == 'closed' then return m[1] end
if m[2] ~= ARGV[1] then return 'wrong_round' end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then
  redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
  return 'replaced'
end
if redis.call('HLEN', KEYS[2]) >= tonumber(m[4]) then return 'full' end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('PEXPIREAT', KEYS[2], m[3])
return 'new'
"""

_SWAP = """
local m = redis.call('HMGET', KEYS[1], 'phase', 'round', 'shown')
if not m[1] then return 'unknown' end
if m[1] ~= ARGV[1] or m[2] ~= ARGV[2] or m[3] ~= ARGV[3] then return 'changed' end
redis.call('HSET', KEYS[1], 'phase', ARGV[4], 'round', ARGV[5], 'shown', ARGV[6], unpack(ARGV, 7))
return 'ok'
"""


def _state_args(state: PollState) -> list[str]:
    return [state.phase, str(state.round), "1" if state.shown else "0"]


class RedisPollStore(PollStore):
    """Polls in Redis (``ATTNVIZ_REDIS_URL``): shared by every replica that uses the same URL."""

    backend = "redis"
    _down_errors = (redis.RedisError, OSError)

    def __init__(
        self, client: redis.Redis, limits: Limits = Limits(), prefix: str = "attnviz"
    ) -> None:
        super().__init__(limits)
        self.client = client
        self.prefix = prefix
        self._create = client.register_script(_CREATE)
        self._answer = client.register_script(_ANSWER)
        self._swap = client.register_script(_SWAP)

    @classmethod
    def from_url(
        cls,
        url: str,
        limits: Limits = Limits(),
        prefix: str = "attnviz",
        timeout: float = TIMEOUT_SECONDS,
    ) -> RedisPollStore:
        """A store on the Redis at ``url``; raises ValueError for a URL redis-py cannot read.
        Nothing is sent until the first operation."""
        client = redis.Redis.from_url(
            url,
            decode_responses=True,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 1),
            health_check_interval=30,
        )
        return cls(client, limits, prefix)

    # --- keys -------------------------------------------------------------------------------------
    def key(self, code: str) -> str:
        return f"{self.prefix}:poll:{{{code}}}"

    def round_key(self, code: str, round_: int) -> str:
        return f"{self.key(code)}:r{round_}"

    @property
    def index_key(self) -> str:
        return f"{self.prefix}:polls"

    # --- primitives -------------------------------------------------------------------------------
    def _insert(self, code: str, fields: dict[str, str]) -> Literal["ok", "taken", "full"]:
        flat: list[Any] = [code, int(self.limits.ttl_seconds * 1000), self.limits.max_polls]
        for name, value in fields.items():
            flat += [name, value]
        outcome = self._create(keys=[self.index_key, self.key(code)], args=flat)
        return cast(Literal["ok", "taken", "full"], outcome)

    def _fields(self, code: str) -> dict[str, str] | None:
        fields = cast(dict[str, str], self.client.hgetall(self.key(code)))
        return fields or None

    def _answers(self, code: str, rounds: Sequence[int]) -> dict[int, dict[str, str]]:
        pipe = self.client.pipeline(transaction=True)  # one snapshot of every round
        for r in rounds:
            pipe.hgetall(self.round_key(code, r))
        return dict(zip(rounds, pipe.execute(), strict=True))

    def _own_answer(self, code: str, round_: int, sid: str) -> str | None:
        return cast(str | None, self.client.hget(self.round_key(code, round_), sid))

    def _put_answer(self, code: str, round_: int, sid: str, encoded: str) -> PutOutcome:
        outcome = self._answer(
            keys=[self.key(code), self.round_key(code, round_)], args=[str(round_), sid, encoded]
        )
        return cast(PutOutcome, outcome)

    def _swap_state(
        self, code: str, old: PollState, new: PollState, extra: dict[str, str]
    ) -> SwapOutcome:
        args = _state_args(old) + _state_args(new)
        for name, value in extra.items():
            args += [name, value]
        return cast(SwapOutcome, self._swap(keys=[self.key(code)], args=args))

    def _ping(self) -> None:
        self.client.ping()
