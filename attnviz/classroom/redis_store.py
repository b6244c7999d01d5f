"""Class polls in Redis, so that every replica behind the load balancer sees the same polls.

Keys, under a prefix (``attnviz`` by default); ``{CODE}`` is a Redis hash tag, so one poll's
keys would stay on one node of a cluster:

    attnviz:poll:{CODE}       hash: the poll's fields (question JSON, sealed key, salt, secret's
                              SHA-256, the presenter's HMAC and id, phase, round, shown, its
                              limits, the join pace's bucket, refusals counted, expires_ms)
    attnviz:poll:{CODE}:r1    hash: salted browser id -> encoded answer, round 1 (and :r2)
    attnviz:poll:{CODE}:sends hash: salted browser id -> "minute's start ms:sends", for every
                              browser the poll admitted
    attnviz:polls             sorted set: code -> expiry (ms), the polls taking answers (the cap)
    attnviz:stored            sorted set: code -> expiry (ms), every poll kept
    attnviz:owner:ID          sorted set: code -> expiry (ms), one presenter's polls taking answers

Every key expires with its poll (PEXPIREAT, from Redis's own clock, so replicas agree). Each
change is one Lua script, atomic in Redis: an answer is checked against the poll's phase,
round, cap, the browser's sends this minute and the poll's join pace (a token bucket in the
poll's hash, on Redis's clock), and written with one HSET of its salted browser id (one answer
per browser per round; a second overwrites the first, so nothing is lost or counted twice,
however many replicas write at once); a state change is a compare-and-set on (phase, round,
shown), and revealing or closing takes the poll out of the two counts of polls taking answers.

Redis that goes away: short socket timeouts and one retry (a pooled connection left over from
before a Redis restart fails once, then reconnects), then the store returns "unavailable".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from attnviz.classroom.polls import (
    InsertOutcome,
    Limits,
    PollState,
    PollStore,
    PutOutcome,
    SwapOutcome,
)

# Socket timeouts: a Redis that stops answering costs a page at most about this much per
# attempt (two attempts), rather than hanging the student's script run.
TIMEOUT_SECONDS = 0.5

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# KEYS: polls taking answers, the poll, every poll kept, the presenter's polls taking answers.
# ARGV: code, ttl ms, max_polls, max_stored, polls_per_presenter, then the fields.
_CREATE = (
    _NOW
    + """
local owner = ''
for i = 6, #ARGV, 2 do
  if ARGV[i] == 'owner_id' then owner = ARGV[i + 1] end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('EXISTS', KEYS[2]) == 1 then return 'taken' end
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[4]) then return 'stored_full' end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then return 'full' end
if owner ~= '' then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  if redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[5]) then return 'presenter_full' end
end
local expires = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[2], 'expires_ms', expires, unpack(ARGV, 6))
redis.call('PEXPIREAT', KEYS[2], expires)
local counted = {KEYS[1], KEYS[3]}
if owner ~= '' then counted[3] = KEYS[4] end
for _, index in ipairs(counted) do
  redis.call('ZADD', index, expires, ARGV[1])
  if redis.call('PEXPIRETIME', index) < expires then redis.call('PEXPIREAT', index, expires) end
end
return 'ok'
"""
)

# KEYS: the poll, the round's answers, the poll's sends. ARGV: round, browser id, answer.
_ANSWER = (
    _NOW
    + """
local m = redis.call('HMGET', KEYS[1], 'phase', 'round', 'expires_ms', 'max_answers',
  'sends_per_minute', 'join_burst', 'joins_per_minute', 'join_tokens', 'join_at_ms')
if not m[1] then return 'unknown' end
if m[1] == 'revealed' or m[1] == 'closed' then return m[1] end
if m[2] ~= ARGV[1] then return 'wrong_round' end
local sent = redis.call('HGET', KEYS[3], ARGV[2])
local start, count = now, 0
if sent then
  local at = string.find(sent, ':', 1, true)
  start, count = tonumber(string.sub(sent, 1, at - 1)), tonumber(string.sub(sent, at + 1))
  if now - start >= 60000 then start, count = now, 0 end
end
if count >= tonumber(m[5]) then
  redis.call('HINCRBY', KEYS[1], 'refused_too_fast', 1)
  return 'too_fast'
end
local replaced = redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1
if not replaced and redis.call('HLEN', KEYS[2]) >= tonumber(m[4]) then
  redis.call('HINCRBY', KEYS[1], 'refused_full', 1)
  return 'full'
end
if not sent then
  local burst = tonumber(m[6])
  local tokens = math.min(burst, tonumber(m[8]) + (now - tonumber(m[9])) * tonumber(m[7]) / 60000)
  if tokens < 1 then
    redis.call('HSET', KEYS[1], 'join_tokens', tostring(tokens), 'join_at_ms', now)
    redis.call('HINCRBY', KEYS[1], 'refused_crowded', 1)
    return 'crowded'
  end
  redis.call('HSET', KEYS[1], 'join_tokens', tostring(tokens - 1), 'join_at_ms', now)
end
redis.call('HSET', KEYS[3], ARGV[2], start .. ':' .. (count + 1))
redis.call('PEXPIREAT', KEYS[3], m[3])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
redis.call('PEXPIREAT', KEYS[2], m[3])
if replaced then return 'replaced' end
return 'new'
"""
)

# KEYS: the poll, polls taking answers, the presenter's. ARGV: the old state,
# the new state, then extra fields; ARGV[7] the code.
_SWAP = """
local m = redis.call('HMGET', KEYS[1], 'phase', 'round', 'shown')
if not m[1] then return 'unknown' end
if m[1] ~= ARGV[1] or m[2] ~= ARGV[2] or m[3] ~= ARGV[3] then return 'changed' end
redis.call('HSET', KEYS[1], 'phase', ARGV[4], 'round', ARGV[5], 'shown', ARGV[6], unpack(ARGV, 8))
if ARGV[4] ~= 'open' then
  redis.call('ZREM', KEYS[2], ARGV[7])
  redis.call('ZREM', KEYS[3], ARGV[7])
end
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

    def sends_key(self, code: str) -> str:
        return f"{self.key(code)}:sends"

    @property
    def index_key(self) -> str:
        """The polls taking answers (what :attr:`Limits.max_polls` counts)."""
        return f"{self.prefix}:polls"

    @property
    def stored_key(self) -> str:
        """Every poll kept, closed ones too (what :attr:`Limits.max_stored` counts)."""
        return f"{self.prefix}:stored"

    def owner_key(self, owner: str) -> str:
        """One presenter's polls taking answers (``owner``: ``polls.owner_id``, or "" for
        none)."""
        return f"{self.prefix}:owner:{owner or '-'}"

    # --- primitives -------------------------------------------------------------------------------
    def _insert(self, code: str, fields: dict[str, str]) -> InsertOutcome:
        limits = self.limits
        flat: list[Any] = [
            code,
            int(limits.ttl_seconds * 1000),
            limits.max_polls,
            limits.max_stored,
            limits.polls_per_presenter,
        ]
        for name, value in fields.items():
            flat += [name, value]
        keys = [
            self.index_key,
            self.key(code),
            self.stored_key,
            self.owner_key(fields.get("owner_id", "")),
        ]
        return cast(InsertOutcome, self._create(keys=keys, args=flat))

    def _fields(self, code: str) -> dict[str, str] | None:
        pipe = self.client.pipeline(transaction=True)
        pipe.hgetall(self.key(code))
        pipe.pttl(self.key(code))
        fields, ttl_ms = pipe.execute()
        if not fields:
            return None
        return {**cast(dict[str, str], fields), "ttl_ms": str(max(0, int(ttl_ms)))}

    def _answers(self, code: str, rounds: Sequence[int]) -> dict[int, dict[str, str]]:
        pipe = self.client.pipeline(transaction=True)  # one snapshot of every round
        for r in rounds:
            pipe.hgetall(self.round_key(code, r))
        return dict(zip(rounds, pipe.execute(), strict=True))

    def _own_answer(self, code: str, round_: int, sid: str) -> str | None:
        return cast(str | None, self.client.hget(self.round_key(code, round_), sid))

    def _put_answer(self, code: str, round_: int, sid: str, encoded: str) -> PutOutcome:
        keys = [self.key(code), self.round_key(code, round_), self.sends_key(code)]
        outcome = self._answer(keys=keys, args=[str(round_), sid, encoded])
        return cast(PutOutcome, outcome)

    def _swap_state(
        self, code: str, old: PollState, new: PollState, extra: dict[str, str], owner: str
    ) -> SwapOutcome:
        args = [*_state_args(old), *_state_args(new), code]
        for name, value in extra.items():
            args += [name, value]
        keys = [self.key(code), self.index_key, self.owner_key(owner)]
        return cast(SwapOutcome, self._swap(keys=keys, args=args))

    def _ping(self) -> None:
        self.client.ping()

    def _uptime(self) -> float | None:
        return float(self.client.info("server")["uptime_in_seconds"])
