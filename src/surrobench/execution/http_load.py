"""The open-loop schedule sent to an HTTP endpoint (``surrobench serve --url``) with httpx's asyncio client
(optional: ``pip install 'surrobench[serve]'``): each request a ``POST`` of ``{"id": i}`` at its scheduled
arrival whatever the server does (the server makes its own input, as ``examples/serve_http.py``). Latency =
response received - scheduled arrival (a late send is reported as the load generator's lateness). A request
with no 2xx status, a connection error or no answer within the drain time is dropped.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import Counter
from urllib.parse import urlsplit

import numpy as np

from surrobench.errors import UsageError
from surrobench.execution.batcher import ServeTrace, unloaded_latency
from surrobench.records.serve import UnloadedLatency

#: Connections kept open at once, so the pool does not close the open loop (httpx's default limit is 100).
MAX_CONNECTIONS = 256


def _httpx():
    try:
        import httpx
    except ImportError:
        raise UsageError.bad("url", "needs httpx: pip install 'surrobench[serve]' (or pip install httpx)") from None
    return httpx


def _error_name(exc: BaseException) -> str:
    """``connection refused`` when a ``ConnectionRefusedError`` is in the chain (asyncio wraps it as "All connection
    attempts failed"), else the exception's class (``ReadTimeout``)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        cause = cause.__cause__ or cause.__context__
    return type(exc).__name__


async def _send_all(
    url: str, arrivals_s: np.ndarray, timeout_s: float
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    httpx = _httpx()
    n = arrivals_s.size
    sent, done = np.full(n, np.nan), np.full(n, np.nan)
    errors: Counter[str] = Counter()
    limits = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS)
    async with httpx.AsyncClient(limits=limits, timeout=timeout_s) as client:
        origin = time.perf_counter()

        async def one(i: int) -> None:
            await asyncio.sleep(max(0.0, origin + arrivals_s[i] - time.perf_counter()))
            sent[i] = time.perf_counter() - origin
            try:
                response = await client.post(url, json={"id": i})
            except httpx.HTTPError as exc:
                errors[_error_name(exc)] += 1
                return
            if response.is_success:
                done[i] = time.perf_counter() - origin
            else:
                errors[f"HTTP {response.status_code}"] += 1

        await asyncio.gather(*(one(i) for i in range(n)))
    return sent, done, dict(errors)


def check_url(url: str) -> None:
    """Raises:
    UsageError: ``url`` is not an ``http://`` or ``https://`` address."""
    if not url.startswith(("http://", "https://")):
        raise UsageError.bad("url", f"{url!r}: give an http:// or https:// address")


#: How long the reachability check waits for a TCP connection, s.
CONNECT_TIMEOUT_S = 3.0
#: How long an unloaded request (:func:`http_unloaded`) is waited on, s.
REQUEST_TIMEOUT_S = 10.0


def check_reachable(url: str) -> None:
    """Open and close one TCP connection to ``url``, so a down endpoint is a usage error.

    Raises:
        UsageError: refused, unresolved, or no connection within :data:`CONNECT_TIMEOUT_S`.
    """
    check_url(url)
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except ConnectionRefusedError:
        raise UsageError.bad("url", f"{url!r}: connection refused at {host}:{port} (is the server running?)") from None
    except socket.gaierror as exc:
        raise UsageError.bad("url", f"{url!r}: cannot resolve host {host!r} ({exc.strerror})") from None
    except OSError as exc:
        raise UsageError.bad("url", f"{url!r}: cannot connect to {host}:{port} ({exc.strerror or exc})") from None


def http_open_loop(url: str, arrivals_s: np.ndarray, drain_s: float) -> ServeTrace:
    """Send the schedule ``arrivals_s`` (s, ascending) to ``url``, each request waiting at most ``drain_s``
    (``start_s``: send times; ``wake_late_s``: their lateness).

    Raises:
        UsageError: httpx is not installed, or the URL is not http(s).
    """
    check_url(url)
    began = time.perf_counter()
    sent, done, errors = asyncio.run(_send_all(url, np.asarray(arrivals_s, dtype=float), drain_s))
    trace = ServeTrace(arrival_s=np.asarray(arrivals_s, dtype=float), start_s=sent, completion_s=done)
    trace.server_seen, trace.errors = False, errors
    trace.wake_late_s = list(np.maximum(0.0, sent - trace.arrival_s))
    trace.elapsed_s = time.perf_counter() - began
    return trace


def http_unloaded(url: str, budget_s: float) -> dict[int, UnloadedLatency]:
    """:func:`~surrobench.execution.batcher.unloaded_latency` of single requests (``POST {"id": -1}``, each given
    :data:`REQUEST_TIMEOUT_S`) within ``budget_s``, batch size 1 only, no saturated cycle (it batches by its own policy).

    Raises:
        UsageError: httpx is not installed, or a request failed (its cause named).
    """
    httpx = _httpx()
    with httpx.Client(timeout=REQUEST_TIMEOUT_S) as client:

        def one(k: int) -> float:
            began = time.perf_counter()
            try:
                response = client.post(url, json={"id": -1})
            except httpx.HTTPError as exc:
                raise UsageError.bad("url", f"{url!r}: an unloaded request failed: {_error_name(exc)}") from None
            if not response.is_success:
                raise UsageError.bad("url", f"{url!r}: an unloaded request failed: HTTP {response.status_code}")
            return time.perf_counter() - began

        return unloaded_latency(one, (1,), budget_s)
