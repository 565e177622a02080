"""What the checks compute once per process and share between its grading threads.

The grader keeps, per process, results that depend on nothing of a submission's (reference
modules and their results, a check's own random draws, the sizes Hypothesis generates): the
key names everything the value depends on. A cache is bounded: when full it starts over, so a
long batch never grows it without limit (entries are cheap to make again)."""

import threading


class ProcessCache:
    """A dict shared by this process's threads: ``get`` a key's value, or ``keep`` one."""

    def __init__(self, limit=None):
        self._values = {}
        self._lock = threading.Lock()
        self._limit = limit

    def get(self, key):
        with self._lock:
            return self._values.get(key)

    def keep(self, key, value):
        """Keep ``value`` for ``key`` unless another thread kept one first; returns the kept one."""
        with self._lock:
            if self._limit is not None and len(self._values) >= self._limit:
                self._values.clear()
            return self._values.setdefault(key, value)

    def clear(self):
        with self._lock:
            self._values.clear()

    def snapshot(self):
        """A copy of what is kept now ({key: value})."""
        with self._lock:
            return dict(self._values)
