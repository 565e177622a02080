"""A worker in THIS process, for TRUSTED code only: the kit's own tests and ``bench/``.

Never grade a student's submission with it. The code it loads runs in the caller's own
process, with its rights, its files, its memory and its other students' data, without any
of the sandbox's isolation, limits or time-outs. The kit itself never imports this module
(``tests/test_inprocess.py`` checks that); only ``tests/`` and ``bench/`` do, on code the
repository holds (the reference, the corpus, the bundled examples).

What runs is the real thing less the process boundary: a real ``Session`` whose worker is
``worker.py``'s own ``Worker`` object, here. A request goes to the worker's ``op_*`` handler
as ``serve()`` would hand it over (the tensors the session encoded are decoded by the
worker's ``wire``, the package's own module, without a frame), and an error comes back as the
``StudentError`` a sandboxed worker's reply raises. Nothing is forked, framed, piped, isolated
or limited.

- ``session(code, names)``: a ``Session`` whose worker runs ``code`` here
  (``tests/test_mistakes.py`` diagnoses corpus files with it);
- ``without_sandbox()``: from now on every ``Session`` of this process that is given no
  zygote runs its worker here, set up as a worker of the zygote is (``bench/checks_alone.py``
  times ``grader.grade`` with it).
"""

import importlib.util
import sys
import time
from pathlib import Path

from autograder.sandbox import session as sessions
from autograder.sandbox import wire
from autograder.sandbox.process import StudentError

_SANDBOX = Path(__file__).resolve().parent

__all__ = ["Zygote", "session", "without_sandbox"]


def _script(name):
    """``sandbox/<name>.py`` as the zygote imports it: the top-level module ``name`` (``worker``,
    ``meta_device``, ``tracing``), with ``wire`` the package's own module (a tensor the session
    encodes is decoded by the same ``wire``)."""
    if sys.modules.setdefault("wire", wire) is not wire:
        raise RuntimeError("another module named 'wire' is imported: the in-process worker needs "
                           "autograder.sandbox.wire under that name")
    if name == "worker":
        _script("tracing")  # what worker.py imports beside wire
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, _SANDBOX / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    if Path(getattr(module, "__file__", "")).resolve() != _SANDBOX / f"{name}.py":
        raise RuntimeError(f"another module named {name!r} is imported: {module!r}")
    return module


class _Connection:
    """A worker connection (``process.WorkerConnection``'s interface) whose worker is a
    ``worker.Worker`` object of this process."""

    pid = None
    alive = True

    def __init__(self, zygote):
        self._zygote = zygote
        self._worker_module = _script("worker")
        self._worker = self._worker_module.Worker(channel=None)

    def request(self, message, timeout):
        """The worker's answer to ``message``, as ``worker.serve`` computes it (``timeout``
        is not kept: nothing here can be stopped)."""
        self._zygote.requests += 1
        handler = getattr(self._worker, "op_" + str(message.get("op")), None)
        try:
            if handler is None:
                raise ValueError(f"unknown op {message.get('op')!r}")
            answer = handler(message)
        except BaseException as error:  # as serve() answers a request that raises
            raise StudentError(self._worker_module.describe_failure(self._worker, error)) from None
        return {**answer, "seq": message.get("seq")}

    def cpu_seconds(self):
        return time.process_time()  # the worker's requests run in this process

    def output_tail(self, limit=4000):
        return ""  # what the code prints goes to this process's own stdout

    def close(self):
        self._worker = None
        self.alive = False


class Zygote:
    """Gives each ``Session`` a worker in this process (``spawn``, as ``process.Zygote``);
    ``requests`` counts the requests all of them answered."""

    def __init__(self):
        self.requests = 0

    def spawn(self, limits, slot=0):
        return _Connection(self)


def session(code, names=(), origin="cell 1"):
    """A ``Session`` on ``code`` (trusted: it runs in this process), loaded: code that raises
    while it loads is an error of the caller (``RuntimeError``), not a student's. Its
    ``zygote.requests`` counts the requests its worker answered, the load included."""
    started = sessions.Session([{"code": code, "origin": origin}], list(names), None, zygote=Zygote(),
                               max_restarts=0)
    info = started.load()
    if info["errors"]:
        raise RuntimeError(f"{origin} does not load: {info['errors']}")
    return started


def without_sandbox():
    """From now on, every ``Session`` of this process that is given no zygote (as
    ``grader.grade`` makes them) runs its worker in this process, which is set up as a
    worker of the zygote is: one torch thread, the ``meta`` device's native kernels, warm."""
    import torch

    _script("worker")
    meta_device = _script("meta_device")
    torch.set_num_threads(1)  # as in a worker
    meta_device.lazy_imports()  # the device checks run on meta as in a worker of the zygote
    meta_device.native_meta_kernels()
    meta_device.warm_up_meta()
    shared = Zygote()
    sessions.shared_zygote = lambda: shared
