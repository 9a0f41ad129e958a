"""Hands the memory freed by a big request back to the operating system.

glibc's malloc keeps freed memory for reuse, per thread (an arena each), instead of returning it: without help
a server's resident size climbs with every large request handled on another thread, and stays there.
`release()` asks glibc to return its free pages (`malloc_trim`); where there is no glibc it does nothing.
"""

import ctypes

BIG_REQUEST_BYTES = 1024 * 1024  # requests from this size on are followed by a release


def _malloc_trim():
    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)  # the process's own symbols: libc's on Linux
    except OSError:
        return None


_MALLOC_TRIM = _malloc_trim()


def release():
    """Returns free heap memory to the operating system, where the C library can (glibc)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)
