"""A TCP fault proxy to put between a manager (or any client) and the API server.

`FaultProxy` listens on a loopback port and forwards every connection to an upstream
address, byte for byte (TLS passes through untouched, so the kubeconfig only changes its
``server`` URL). On demand it breaks the path the way networks break:

* `blackhole`: every connection open now goes silent in both directions: bytes are read
  and dropped, no FIN, no RST (a half-open connection, a NAT entry that expired, a pulled
  cable). New connections pass, or with ``new_connections=True`` go silent too until
  `heal` (a partition: the client's TLS handshake never completes).
* `reset`: every connection open now is closed with a TCP RST on both sides.
* `refuse`: the listener closes, so new connections get ``ECONNREFUSED`` (the API server
  is down); open connections pass.
* `stall_next_request`: the next connection that sends a request swallows it and
  everything after it: the request never reaches the server and no answer comes back.
  The proxy sees bytes, not HTTP: over TLS the "request" is the next record any client
  sends, so a new connection stalls in its handshake, a kept-alive one at its next request.
* `heal`: new connections and requests pass again (the listener reopens on the same
  port). Connections already blackholed or stalled stay dead: the client must notice.

Example, a cache that must notice a half-open watch (``RestConfig`` is a frozen dataclass,
so `dataclasses.replace` points a copy at the proxy)::

    async with Environment() as env:
        direct = await load_rest_config(env.kubeconfig_path)
        async with FaultProxy(upstream=("127.0.0.1", env.apiserver_port)) as proxy:
            async with new_client(dataclasses.replace(direct, host=proxy.url())) as proxied:
                ... start a cache on ``proxied``; wait for it to sync ...
                proxy.blackhole()                            # the watch goes quiet
                ... change objects through new_client(direct), which does not use the proxy ...
                await eventually(cache_matches_server, timeout=deadline + 10)

Every connection's pumps are tasks the proxy owns: `close` (or leaving the ``async with``)
cancels and awaits them and closes every socket. The proxy only listens on loopback.

Python only: no anchor ships one (Go tests use toxiproxy or iptables).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import struct
from types import TracebackType
from typing import Literal, Self

__all__ = ["FaultProxy"]

_CHUNK = 65536

_State = Literal["pass", "blackholed", "stalled"]


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _abort_with_rst(writer: asyncio.StreamWriter) -> None:
    """Close a stream so the peer sees a TCP RST, not a FIN (SO_LINGER with a zero timeout)."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class _Connection:
    """One proxied connection: two pumps and a state shared by both directions."""

    def __init__(
        self,
        proxy: FaultProxy,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        upstream: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> None:
        self._proxy = proxy
        self.client_reader, self.client_writer = client
        self.upstream_reader, self.upstream_writer = upstream
        self.state: _State = "pass"

    async def run(self) -> None:
        try:
            async with asyncio.TaskGroup() as pumps:
                pumps.create_task(self._pump(self.client_reader, self.upstream_writer, from_client=True))
                pumps.create_task(self._pump(self.upstream_reader, self.client_writer, from_client=False))
        finally:
            self.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, from_client: bool) -> None:
        try:
            while True:
                data = await reader.read(_CHUNK)
                if not data:
                    break
                if from_client and self.state == "pass" and self._proxy._take_stall():
                    self.state = "stalled"
                if self.state != "pass":
                    continue  # swallowed: read and dropped, nothing forwarded
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        if self.state == "pass" or from_client:
            self.close()  # one side ended: end the other too
        # else: the server ended a silent connection; the client never hears of it and its
        # pump keeps draining until the client gives up.

    def close(self) -> None:
        for writer in (self.client_writer, self.upstream_writer):
            if not writer.is_closing():
                writer.close()

    def reset(self) -> None:
        _abort_with_rst(self.client_writer)
        _abort_with_rst(self.upstream_writer)


class FaultProxy:
    """Forwards loopback TCP connections to ``upstream`` and breaks them on demand.

    Args:
        upstream: ``(host, port)`` of the real server (the API server's secure port).
        listen_host: the loopback address to listen on (default ``127.0.0.1``); anything
            that is not loopback is refused with ``ValueError``.
        listen_port: the port to listen on; 0 (default) picks a free one at `start`.
        connect_timeout: seconds to wait for the upstream connection (default 10 s); a
            connection that cannot reach the server is closed.

    Attributes:
        accepted: connections accepted so far.
    """

    def __init__(
        self,
        *,
        upstream: tuple[str, int],
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        connect_timeout: float = 10.0,
    ) -> None:
        if not _is_loopback(listen_host):
            raise ValueError(f"FaultProxy listens on loopback only, not {listen_host!r}")
        self._upstream = upstream
        self._listen_host = listen_host
        self._port = listen_port
        self._connect_timeout = connect_timeout
        self._server: asyncio.Server | None = None
        self._retired: list[asyncio.Server] = []
        self._connections: set[_Connection] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._stall_pending = False
        self._blackhole_new = False
        self._closed = False
        self.accepted = 0

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Start listening (picks the port when ``listen_port`` was 0)."""
        if self._closed:
            raise RuntimeError("FaultProxy is closed")
        if self._server is None:
            self._server = await asyncio.start_server(self._accept, self._listen_host, self._port)
            self._port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        """Stop listening, cancel every pump and close every socket. Idempotent."""
        self._closed = True
        self._stop_listening()
        for conn in list(self._connections):
            conn.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        retired, self._retired = self._retired, []
        for server in retired:
            await server.wait_closed()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- address -------------------------------------------------------------------------

    @property
    def host(self) -> str:
        """The address the proxy listens on."""
        return self._listen_host

    @property
    def port(self) -> int:
        """The port the proxy listens on (known after `start`)."""
        return self._port

    def url(self, scheme: str = "https") -> str:
        """``scheme://host:port`` of the proxy, for a kubeconfig's ``server``."""
        host = f"[{self._listen_host}]" if ":" in self._listen_host else self._listen_host
        return f"{scheme}://{host}:{self._port}"

    @property
    def open_connections(self) -> int:
        """Connections open now (passing, blackholed or stalled)."""
        return len(self._connections)

    # -- faults --------------------------------------------------------------------------

    def blackhole(self, *, new_connections: bool = False) -> int:
        """Make every open connection silent both ways.

        Args:
            new_connections: also swallow every connection opened from now until `heal`
                (nothing reaches the server, nothing comes back). Default: they pass.

        Returns:
            How many open connections went silent.
        """
        self._blackhole_new = self._blackhole_new or new_connections
        hit = 0
        for conn in self._connections:
            if conn.state == "pass":
                conn.state = "blackholed"
                hit += 1
        return hit

    def reset(self) -> int:
        """Close every open connection with a TCP RST on both sides.

        Returns:
            How many connections were reset.
        """
        conns = list(self._connections)
        for conn in conns:
            conn.reset()
        return len(conns)

    def refuse(self) -> None:
        """Close the listener: new connections are refused until `heal`. Open ones pass."""
        self._stop_listening()

    def stall_next_request(self) -> None:
        """The next request (the next bytes any client sends) is swallowed with its connection."""
        self._stall_pending = True

    async def heal(self) -> None:
        """New connections and requests pass again; dead connections stay dead."""
        self._stall_pending = False
        self._blackhole_new = False
        if not self._closed:
            await self.start()

    # -- internals -----------------------------------------------------------------------

    @staticmethod
    async def _swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read and drop until the client gives up; never answer, never close first."""
        try:
            while await reader.read(_CHUNK):
                pass
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    def _take_stall(self) -> bool:
        if self._stall_pending:
            self._stall_pending = False
            return True
        return False

    def _stop_listening(self) -> None:
        """Close the listening socket now (connections already accepted stay open)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
            self._retired.append(server)

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """start_server's callback: the connection is served by a task the proxy owns."""
        self.accepted += 1
        task = asyncio.create_task(self._serve(reader, writer), name=f"fault-proxy-{self._port}-{self.accepted}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._blackhole_new:
            await self._swallow(reader, writer)
            return
        try:
            async with asyncio.timeout(self._connect_timeout):
                upstream = await asyncio.open_connection(*self._upstream)
        except (OSError, TimeoutError):
            _abort_with_rst(writer)
            return
        except asyncio.CancelledError:
            writer.close()
            raise
        conn = _Connection(self, (reader, writer), upstream)
        self._connections.add(conn)
        try:
            await conn.run()
        finally:
            self._connections.discard(conn)
