"""A pytest plugin (``-p tests.stop_on_signal`` in pyproject.toml's ``addopts``): the test run
stops after a test during which this process was sent SIGTERM or SIGINT (by ``timeout``, a CI
runner, Ctrl-C) and contrastkit's handler took it. The command under test turned the signal
into a clean exit, or a training run into a stop, and without this the run would go on to the
next test as if nothing had been asked. Tests marked ``signals`` send signals to their own
process on purpose and are exempt."""

from __future__ import annotations

import pytest

from contrastkit.interrupts import forget_received, received, signal_name


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    forget_received()
    yield
    if received() and item.get_closest_marker("signals") is None:
        item.session.shouldstop = f"stopped by {signal_name(received()[0])}"
