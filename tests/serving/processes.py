"""Whether a server process is gone and its port closed, read from the real process table and
sockets (psutil)."""

from __future__ import annotations

import time

import psutil


def listening(port: int) -> list:
    """The sockets listening on ``port`` on this machine."""
    return [c for c in psutil.net_connections(kind="inet") if c.laddr and c.laddr.port == port
            and c.status == psutil.CONN_LISTEN]


def gone(pid: int, port: int, within: float = 15.0) -> bool:
    """True once process ``pid`` has exited (or is a zombie) and nothing listens on ``port``."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            exited = psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            exited = True
        if exited and not listening(port):
            return True
        time.sleep(0.1)
    return False
