"""The address of a ``dask.distributed`` scheduler (``--scheduler``), checked before Dask is
asked to connect: its form (``tcp://HOST:PORT``, ``tls://``, ``ws://``, ``wss://``, or
``HOST:PORT`` for tcp), then, for tcp, that something listens there and speaks first as a Dask
scheduler does (its handshake, a short message) within :func:`timeout` seconds. A closed port,
a peer that never answers and one that sends something else are each a :class:`UsageError`
within that time, never a wait without end or a crash on bytes read as a frame's length.

>>> parse_address("tcp://127.0.0.1:8786")
('tcp', '127.0.0.1', 8786)
>>> parse_address("[::1]:8786")
('tcp', '::1', 8786)
"""

from __future__ import annotations

import math
import os
import re
import socket
import time

from ..core.errors import UsageError, shorten, visible

#: The environment variable that sets the seconds to wait for the scheduler (default 5).
TIMEOUT_VARIABLE = "CGRAPH_SCHEDULER_TIMEOUT"
DEFAULT_TIMEOUT = 5.0
SCHEMES = ("tcp", "tls", "ws", "wss")
#: The most a Dask handshake takes (a few dozen bytes today); a longer first message is not one.
HANDSHAKE_LIMIT = 1 << 16
_FORM = "tcp://HOST:PORT (a port from 1 to 65535)"


def timeout() -> float:
    """The seconds to wait for the scheduler: $CGRAPH_SCHEDULER_TIMEOUT, or 5.

    >>> timeout() > 0
    True
    """
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 < seconds <= 3600):
        raise UsageError(
            f"{TIMEOUT_VARIABLE} is seconds above 0 and up to 3600, not {shorten(visible(text))!r}"
        )
    return seconds


def parse_address(address: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of a scheduler's address, or a :class:`UsageError` saying
    what form it takes."""
    shown = shorten(visible(address)) if address.strip() else repr(address)
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme not in SCHEMES:
        raise UsageError(
            f"--scheduler {shown}: the address of a Dask scheduler is {_FORM}",
            hints=[f"the schemes Dask connects with: {', '.join(SCHEMES)}"],
        )
    found = re.fullmatch(r"(\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]@]+):(\d{1,5})/?", rest)
    if found is None or not 1 <= int(found.group(2)) <= 65535:
        raise UsageError(f"--scheduler {shown}: the address of a Dask scheduler is {_FORM}")
    return scheme, found.group(1).strip("[]"), int(found.group(2))


def check_scheduler(address: str, seconds: float) -> None:
    """A :class:`UsageError` unless a Dask scheduler answers at ``address`` within ``seconds``
    (for tls and ws, only that something listens: their handshake is Dask's to make)."""
    scheme, host, port = parse_address(address)
    deadline = time.monotonic() + seconds
    try:
        with socket.create_connection((host, port), timeout=seconds) as peer:
            if scheme == "tcp":
                _handshake(peer, address, deadline)
    except TimeoutError:
        raise UsageError(
            f"the Dask scheduler at {address} did not answer within {seconds:g} s",
            hints=[f"is it a Dask scheduler? {TIMEOUT_VARIABLE}=SECONDS waits longer"],
        ) from None
    except OSError as e:
        raise UsageError(
            f"cannot reach the Dask scheduler at {address}: {e.strerror or e}"
        ) from None


def _handshake(peer: socket.socket, address: str, deadline: float) -> None:
    """The scheduler's first message, as Dask's tcp comm frames it: an 8-byte length, then
    the count of frames, their lengths and the frames, which hold a msgpack map (the
    handshake: compression, python, pickle-protocol)."""
    head = _read(peer, 8, deadline)
    size = int.from_bytes(head, "little") if len(head) == 8 else 0
    body = _read(peer, size, deadline) if 16 <= size <= HANDSHAKE_LIMIT else b""
    if len(body) < 8 or len(body) < size or not _is_handshake(body):
        raise UsageError(
            f"{address} is not a Dask scheduler: what it sent is not a Dask handshake",
            hints=["give the address the scheduler prints: Scheduler at: tcp://HOST:PORT"],
        )


def _is_handshake(body: bytes) -> bool:
    """Whether ``body`` is frames whose lengths add up, the first a msgpack map."""
    count = int.from_bytes(body[:8], "little")
    if not 1 <= count <= 64 or 8 + 8 * count > len(body):
        return False
    sizes = [int.from_bytes(body[8 + 8 * i : 16 + 8 * i], "little") for i in range(count)]
    start = 8 + 8 * count
    if start + sum(sizes) != len(body):
        return False
    try:
        import msgpack  # type: ignore[import-untyped]  # Dask's own dependency
    except ImportError:  # pragma: no cover - distributed installs it
        return True
    try:
        first = msgpack.unpackb(body[start : start + sizes[0]], raw=False)
    except Exception:  # noqa: BLE001 - any of msgpack's errors: not a handshake
        return False
    return isinstance(first, dict)


def _read(peer: socket.socket, count: int, deadline: float) -> bytes:
    """Up to ``count`` bytes (fewer when the peer closes), before ``deadline``."""
    data = b""
    while len(data) < count:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        peer.settimeout(left)
        chunk = peer.recv(min(count - len(data), 1 << 16))
        if not chunk:
            break
        data += chunk
    return data
