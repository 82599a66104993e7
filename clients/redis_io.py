"""What the redis-py reference clients share: one connection of their own, so that "connect"
and "send" are told apart (a failed connect sent nothing: `fail`; a command sent without an
answer may have run: `info`)."""
import redis

from protocol_io import Fail

OP_TIMEOUT_S = 1.5  # one command's socket timeout; past it the outcome is unknown (info)


def client(cfg):
    """A redis-py client on one connection to config.host:config.port, made at the first use."""
    return redis.Redis(host=cfg["host"], port=int(cfg.get("port", 6379)), socket_timeout=OP_TIMEOUT_S,
                       socket_connect_timeout=OP_TIMEOUT_S, single_connection_client=True)


def connected(r):
    """Connects if need be (no-op when connected): an error here means nothing was sent."""
    try:
        r.connection.connect()
    except redis.RedisError as e:
        raise Fail(f"cannot connect: {e}") from e
