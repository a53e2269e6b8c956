"""Fixtures for the async API: one event loop per session, an AsyncFabric on the session's queue, and
`api`, which runs a test once against `Fabric` and once against `AsyncFabric`."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from fabric import AsyncFabric, Fabric


@pytest.fixture(scope="session")
def loop_runner():
    with asyncio.Runner() as runner:
        yield runner


@pytest.fixture(scope="session")
def afab(fab: Fabric, loop_runner: asyncio.Runner) -> AsyncFabric:
    """An AsyncFabric over the session's servers and queue (the `fab` fixture's worker places its writes)."""
    async def connect() -> AsyncFabric:
        return await AsyncFabric.connect(fab.database_url, fab.redis_url, data_dir=fab.settings.data_dir,
                                         run_worker=False, queue_name=fab.settings.queue_name)

    a = loop_runner.run(connect())
    yield a
    loop_runner.run(a.close())


class Blocking:
    """Calls an AsyncFabric's methods to completion on the session loop, so one test body drives both APIs."""

    def __init__(self, target: AsyncFabric, runner: asyncio.Runner):
        self._target, self._runner = target, runner

    def __getattr__(self, name: str):
        attr = getattr(self._target, name)
        if not inspect.iscoroutinefunction(attr):
            return attr

        def call(*args, **kwargs):
            return self._runner.run(attr(*args, **kwargs))
        return call


@pytest.fixture(params=["Fabric", "AsyncFabric"])
def api(request, fab: Fabric):
    """The same test against both APIs (the async one driven to completion call by call)."""
    if request.param == "Fabric":
        return fab
    return Blocking(request.getfixturevalue("afab"), request.getfixturevalue("loop_runner"))
