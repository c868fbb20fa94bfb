"""Whether something listens at an address: tests check that no server outlives what started it."""
from __future__ import annotations

import socket


def listening(address: str) -> bool:
    """Give whether something accepts TCP connections at HOST:PORT."""
    host, _, port = address.rpartition(":")
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex((host, int(port))) == 0
