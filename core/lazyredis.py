"""redis-py loaded only by a process that talks to Redis: the home server has no Redis, and the
package is about 21 MB of a process and 0.3 s of every start (bench/HISTORY.md, "Footprint").

Code that calls Redis imports `redis` in the function that does; code that only catches its
errors names them through `error()`, which does not load the package.
"""

import sys


class _NeverRaised(Exception):
    """Stands for redis.RedisError while redis-py is not loaded: nothing can have raised one."""


def error() -> type[Exception]:
    """redis.RedisError, or, while no code has loaded redis-py, an exception nothing raises.

    `except error():` is evaluated only once something was raised, after any Redis call."""
    module = sys.modules.get("redis")
    return module.RedisError if module is not None else _NeverRaised
