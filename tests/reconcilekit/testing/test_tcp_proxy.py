"""FaultProxy: each fault mode seen from the client's end of a real loopback TCP connection."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from reconcilekit.testing import FaultProxy

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
async def echo() -> AsyncIterator[tuple[str, int]]:
    """An upstream that echoes every chunk back."""
    handlers: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            while data := await reader.read(4096):
                writer.write(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()
            handlers.discard(task)

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    try:
        yield "127.0.0.1", server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for task in list(handlers):
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await server.wait_closed()


async def _roundtrip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, data: bytes) -> bytes:
    writer.write(data)
    await writer.drain()
    async with asyncio.timeout(5):
        return await reader.readexactly(len(data))


async def _silent_for(reader: asyncio.StreamReader, seconds: float) -> bool:
    """True when nothing at all (no data, no EOF, no error) arrives for ``seconds``."""
    try:
        async with asyncio.timeout(seconds):
            await reader.read(1)
    except TimeoutError:
        return True
    return False


async def _served(proxy: FaultProxy, data: bytes) -> asyncio.StreamWriter:
    """Open a new connection through ``proxy`` and check ``data`` comes back; return its writer."""
    reader, writer = await asyncio.open_connection(proxy.host, proxy.port)
    assert await _roundtrip(reader, writer, data) == data
    return writer


async def _unanswered(proxy: FaultProxy, data: bytes) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Open a new connection through ``proxy``, send ``data`` and check that nothing comes back."""
    reader, writer = await asyncio.open_connection(proxy.host, proxy.port)
    writer.write(data)
    await writer.drain()
    assert await _silent_for(reader, 0.5)
    return reader, writer


async def test_passes_bytes_both_ways(echo: tuple[str, int]) -> None:
    """In pass mode the proxy is a plain forwarder."""
    async with FaultProxy(upstream=echo) as proxy:
        assert proxy.url() == f"https://127.0.0.1:{proxy.port}"
        reader, writer = await asyncio.open_connection(proxy.host, proxy.port)
        assert await _roundtrip(reader, writer, b"hello") == b"hello"
        assert proxy.accepted == 1
        writer.close()
        await writer.wait_closed()


async def test_blackhole_silences_open_connections_and_passes_new_ones(echo: tuple[str, int]) -> None:
    """A blackholed connection gets neither data nor EOF; a connection opened after it works."""
    async with FaultProxy(upstream=echo) as proxy:
        reader, writer = await asyncio.open_connection(proxy.host, proxy.port)
        await _roundtrip(reader, writer, b"a")
        assert proxy.blackhole() == 1
        writer.write(b"lost")
        await writer.drain()
        assert await _silent_for(reader, 0.5)
        fresh_writer = await _served(proxy, b"b")
        for w in (writer, fresh_writer):
            w.close()


async def test_blackhole_new_connections_swallows_them_until_heal(echo: tuple[str, int]) -> None:
    """In a partition a new connection gets no answer; after heal new connections pass again."""
    async with FaultProxy(upstream=echo) as proxy:
        proxy.blackhole(new_connections=True)
        reader, writer = await _unanswered(proxy, b"hello?")
        await proxy.heal()
        assert await _silent_for(reader, 0.2)  # a swallowed connection stays dead
        fresh_writer = await _served(proxy, b"b")
        for w in (writer, fresh_writer):
            w.close()


async def test_reset_sends_rst(echo: tuple[str, int]) -> None:
    """A reset connection fails with ConnectionResetError, not a clean EOF."""
    async with FaultProxy(upstream=echo) as proxy:
        reader, writer = await asyncio.open_connection(proxy.host, proxy.port)
        await _roundtrip(reader, writer, b"a")
        assert proxy.reset() == 1
        with pytest.raises(ConnectionResetError):
            async with asyncio.timeout(5):
                await reader.read(1)
        writer.close()


async def test_refuse_then_heal_on_the_same_port(echo: tuple[str, int]) -> None:
    """While refusing, connects get ECONNREFUSED; heal reopens the same port."""
    async with FaultProxy(upstream=echo) as proxy:
        port = proxy.port
        proxy.refuse()
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection(proxy.host, port)
        await proxy.heal()
        assert proxy.port == port
        (await _served(proxy, b"ok")).close()


async def test_stall_next_request_swallows_one_connection(echo: tuple[str, int]) -> None:
    """The next request gets no answer; the connection after it is served."""
    async with FaultProxy(upstream=echo) as proxy:
        proxy.stall_next_request()
        _, writer = await _unanswered(proxy, b"request")
        second_writer = await _served(proxy, b"next")
        for w in (writer, second_writer):
            w.close()


async def test_close_ends_every_connection_and_task(echo: tuple[str, int]) -> None:
    """Leaving the context closes client connections (the leak fixture checks the tasks)."""
    async with FaultProxy(upstream=echo) as proxy:
        reader, writer = await asyncio.open_connection(proxy.host, proxy.port)
        await _roundtrip(reader, writer, b"a")
        proxy.blackhole()
    async with asyncio.timeout(5):
        assert await reader.read(1) == b""
    assert proxy.open_connections == 0
    writer.close()


async def test_unreachable_upstream_resets_the_client() -> None:
    """When the upstream refuses, the proxy's client sees the connection dropped."""
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    dead_port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    async with FaultProxy(upstream=("127.0.0.1", dead_port)) as proxy:
        reader, writer = await asyncio.open_connection(proxy.host, proxy.port)
        with pytest.raises((ConnectionResetError, asyncio.IncompleteReadError)):
            async with asyncio.timeout(5):
                await reader.readexactly(1)
        writer.close()


def test_listens_on_loopback_only() -> None:
    """A non-loopback listen address is refused at construction."""
    with pytest.raises(ValueError, match="loopback"):
        FaultProxy(upstream=("127.0.0.1", 1), listen_host="0.0.0.0")
