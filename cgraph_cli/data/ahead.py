"""Chunks of a data file read ahead, and chunks of results written behind, each by a thread
of its own, while the caller works on the chunk between (runs the program): pyarrow parses,
converts and formats without Python's lock, so that on two cores reading and writing cost
little more than the work they overlap.

>>> list(ahead(iter(range(5))))
[0, 1, 2, 3, 4]
>>> done = []
>>> write = Behind(done.append)
>>> for k in range(3):
...     write(k)
>>> write.finish(); done
[0, 1, 2]
>>> squares = InOrder(lambda k: k * k, done.append)
>>> for k in range(3, 6):
...     squares(k)
>>> squares.finish(); done
[0, 1, 2, 9, 16, 25]
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Chunks read ahead at most: memory still follows the chunk, not the file.
DEPTH = 2
_END = object()


def ahead(items: Iterator[T], depth: int = DEPTH) -> Iterator[T]:
    """``items`` in their order, made by a thread of their own up to ``depth`` items ahead
    of the caller; an error ``items`` raises is raised here, in its place among them. The
    thread starts at the first item asked for; when the caller stops early (an error, the
    generator dropped), the thread stops at its next item, closes ``items`` and is waited
    for, so that nothing reads on after.

    >>> def failing():
    ...     yield 1
    ...     raise ValueError("line 2")
    >>> found = []
    >>> try:
    ...     for item in ahead(failing()):
    ...         found.append(item)
    ... except ValueError as e:
    ...     print(found, e)
    [1] line 2
    """
    done: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(entry) -> bool:
        while not stop.is_set():
            try:
                done.put(entry, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items:
                if not put((item, None)):
                    return
            put((_END, None))
        except BaseException as e:  # the caller raises it, in its place
            put((_END, e))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name="cgraph-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item, error = done.get()
            if error is not None:
                raise error
            if item is _END:
                return
            yield item
    finally:
        stop.set()
        thread.join()


class Behind:
    """``fn`` called on each item given, in order, by a thread of its own, at most ``depth``
    items behind the caller (who waits when it is that far ahead). An error ``fn`` raises is
    raised by the next call or by :meth:`finish`; the items after it are dropped.

    >>> def fail(item):
    ...     raise OSError(f"disk full at {item}")
    >>> write = Behind(fail)
    >>> write(1)
    >>> try:
    ...     write.finish()
    ... except OSError as e:
    ...     print(e)
    disk full at 1
    """

    __slots__ = ("fn", "depth", "_queue", "_thread", "_error")

    def __init__(self, fn: Callable[[T], object], depth: int = DEPTH) -> None:
        self.fn, self.depth = fn, depth
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def __call__(self, item: T) -> None:
        self._raise()
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="cgraph-write-behind", daemon=True
            )
            self._thread.start()
        self._queue.put(item)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is _END:
                return
            if self._error is None:
                try:
                    self.fn(item)
                except BaseException as e:  # the caller raises it
                    self._error = e

    def finish(self) -> None:
        """Wait until every item is done; raise the error of one that failed."""
        self.stop()
        self._raise()

    def stop(self) -> None:
        """Wait until every item given is done (or dropped after an error), raising nothing."""
        if self._thread is not None:
            self._queue.put(_END)
            self._thread.join()
            self._thread = None

    def _raise(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error


class InOrder:
    """``fn`` applied to each item given by ``workers`` threads at once, and ``then`` called
    on the results in the order of the items, by the caller's thread, once more than
    ``depth`` are under way (the rest by :meth:`finish`). An error ``fn`` raises is raised
    where its result would be taken, in its place among them.

    >>> seen = []
    >>> halves = InOrder(lambda k: 1 / k, seen.append, depth=1)
    >>> for k in (1, 2, 0, 4):
    ...     try:
    ...         halves(k)
    ...     except ZeroDivisionError:
    ...         print("item 3 failed after", seen)
    item 3 failed after [1.0, 0.5]
    """

    __slots__ = ("fn", "then", "depth", "_pool", "_pending")

    def __init__(
        self, fn: Callable[[Any], R], then: Callable[[R], object], workers: int = 2, depth: int = 4
    ) -> None:
        self.fn, self.then, self.depth = fn, then, depth
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="cgraph-in-order")
        self._pending: deque[Future] = deque()

    def __call__(self, item: Any) -> None:
        self._pending.append(self._pool.submit(self.fn, item))
        while len(self._pending) > self.depth:
            self.then(self._pending.popleft().result())

    def finish(self) -> None:
        """``then`` on every result left, in order; the threads end."""
        try:
            while self._pending:
                self.then(self._pending.popleft().result())
        finally:
            self.stop()

    def stop(self) -> None:
        """The results left dropped (those under way finish first); the threads end."""
        for future in self._pending:
            future.cancel()
        self._pending.clear()
        self._pool.shutdown(wait=True)
