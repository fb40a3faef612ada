"""Whether a dataset's download host answers: offline, tensorflow-datasets retries a download for minutes before
it fails, so the readers ask first and fail at once with what to pass instead."""

import socket
import urllib.parse


def unreachable_host(url, timeout=5.0):
    """The host of `url` when it cannot be reached (port 443) within `timeout` seconds, else None (also for a
    URL without a host)."""
    host = urllib.parse.urlparse(url or "").hostname
    if not host:
        return None
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return None
    except OSError:
        return host
