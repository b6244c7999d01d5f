"""Moved to bench/support/redis_server.py (bench/ must not import tests/)."""

from bench.support.redis_server import RedisServer

__all__ = ["RedisServer"]
