"""One bounded cache: what clkit makes once and looks up after (plans, builds, masks on the device).

A :class:`Memo` is a dict that makes a missing value on first use and, past
its limit, forgets the entries made first.  Lookups are plain ``dict.get``
(no lock: they are the hot path of every call); making and forgetting take a
lock, and a value made by two threads at once is kept once, the first.

What belongs to one OpenCL context is kept in memos of that context's
:class:`~clkit._platform.runtime.Runtime` (``rt.memo(owner, limit)``), so that
it goes with the runtime when its context is lost, as pyopencl keys its
kernel caches by context and CuPy memoizes per device.
"""

from __future__ import annotations

import threading


class Memo(dict):
    """A dict of at most ``limit`` entries (``None``: no limit), made on first use.

    Examples
    --------
    >>> from clkit._platform.memo import Memo
    >>> squares = Memo(limit=2)
    >>> squares.make(3, lambda: 9), squares.make(4, lambda: 16), squares.make(5, lambda: 25)
    (9, 16, 25)
    >>> sorted(squares)  # the first made went first
    [4, 5]
    """

    def __init__(self, limit: int | None = None):
        super().__init__()
        self.limit = limit
        self._lock = threading.RLock()  # a finalizer (Kernel) may drop an entry while held

    def make(self, key, make):
        """The value of ``key``, made by ``make()`` (outside the lock) if it is missing."""
        found = self.get(key)
        if found is not None:
            return found
        value = make()
        with self._lock:
            found = self.setdefault(key, value)
            if self.limit is not None:
                while len(self) > self.limit:
                    del self[next(iter(self))]
        return found

    def drop(self, key) -> None:
        """Forget ``key`` if it is there."""
        with self._lock:
            self.pop(key, None)
