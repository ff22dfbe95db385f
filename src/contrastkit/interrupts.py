"""Stopping on a signal: SIGTERM stops a command as Ctrl-C (SIGINT) does, with an exception
rather than at once, so that the command can say in one line that it stopped and exit with
128 + the signal's number (the shell's convention).

:class:`Stopped` is that exception. Like ``KeyboardInterrupt`` it is a ``BaseException``, so
that no ``except Exception`` swallows it, and it pickles, so that a sweep's worker process can
hand it to its parent. :func:`sigterm_stops` makes SIGTERM raise it for the duration of a
block (the command line wraps every command in it); :func:`sigint_stops` makes SIGINT stop a
sweep that was started with SIGINT ignored; :func:`stop_once_on_signals` is a sweep
worker's: its first SIGINT or SIGTERM raises :class:`Stopped`, later ones are ignored (the
worker is already stopping). While ``contrastkit.train.pretrain`` runs, its own handlers take
over (finish the step, checkpoint, stop), and the previous ones come back after it.

This module imports neither torch nor numpy.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: Every stop signal a contrastkit handler took in this process, oldest first.
_received: list[int] = []


def note_received(number: int) -> None:
    """Record that a contrastkit handler took the stop signal ``number`` (every handler here
    and the training loop's call it): a host process, such as a test runner, can then tell
    that it was asked to stop even where a command turned the signal into a clean exit."""
    _received.append(int(number))


def received() -> list[int]:
    """The stop signals contrastkit's handlers took since :func:`forget_received`."""
    return list(_received)


def forget_received() -> None:
    """Clear the record of :func:`received`."""
    _received.clear()


class Stopped(BaseException):
    """The process was asked to stop by the signal ``signal_number``."""

    def __init__(self, signal_number: int):
        super().__init__(signal_number)
        self.signal_number = int(signal_number)

    def __str__(self) -> str:
        return f"stopped by {signal_name(self.signal_number)}"


def signal_name(number: int) -> str:
    """``"SIGTERM"`` for 15; ``"signal 99"`` for a number with no name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def stop_signal(error: BaseException) -> int | None:
    """The signal that ``error`` says stopped the process: SIGINT for ``KeyboardInterrupt``,
    ``error.signal_number`` for :class:`Stopped` and ``contrastkit.train.TrainingStopped``;
    ``None`` for any other error."""
    if isinstance(error, KeyboardInterrupt):
        return signal.SIGINT
    number = getattr(error, "signal_number", None)
    return number if isinstance(number, int) else None


@contextlib.contextmanager
def sigterm_stops() -> Iterator[None]:
    """Inside the block, SIGTERM raises :class:`Stopped` (as SIGINT raises
    ``KeyboardInterrupt``); the previous handler is restored after it. Outside the main thread,
    where Python cannot set handlers, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(number, frame):
        note_received(number)
        raise Stopped(number)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def sigint_stops() -> Iterator[None]:
    """Inside the block, SIGINT raises ``KeyboardInterrupt`` also in a process started with
    SIGINT ignored (a shell script's ``cmd &`` starts its command so, and Python then keeps
    ignoring it), as it stops ``contrastkit.train.pretrain`` in that process; SIGINT is ignored
    again after it. A handler installed by the caller is left as it is, and so is everything
    outside the main thread, where Python cannot set handlers."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.SIG_IGN):
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


_stopping: list[int] = []


def stop_once_on_signals() -> None:
    """For the rest of this process (a sweep worker): the first SIGINT or SIGTERM raises
    :class:`Stopped`, and a signal after a stop began (:func:`stopping`) is ignored. The
    parent of a sweep's workers passes a stop on to them, and a terminal's Ctrl-C or a
    scheduler may have signalled them too; the second signal must not cut the first one's
    orderly stop short."""
    def stop(number, frame):
        note_received(number)
        if _stopping:
            return
        raise stopping(number)

    for number in STOP_SIGNALS:
        signal.signal(number, stop)


def stopping(number: int) -> Stopped:
    """Record that this process is stopping on signal ``number`` (see
    :func:`stop_once_on_signals`), and return the :class:`Stopped` to raise."""
    _stopping.append(number)
    return Stopped(number)
