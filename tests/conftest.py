"""Shared fixtures: run the real ``autograder`` command in a subprocess."""

import contextlib
import os
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

# One torch (OpenMP) thread in every process the suite starts (graders, kernels, self-checks,
# nbgrader): two test processes already share the two cores, and idle threads spinning for a
# core the other process holds cost more than they compute. A developer's setting wins.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "submissions"
# Fixtures that take many seconds (a real batch, nbgrader): every test that uses one is slow,
# as is every test that uses a fixture its module names in its own SLOW_FIXTURES.
SLOW_FIXTURES = {"attention_batch", "nbgrader"}


# Session fixtures that several test files share, and the files whose tests use each: under
# pytest-xdist (pyproject.toml's addopts run the suite on two processes) those files go to one
# process together, so the fixture (and every job the ``nbgrader`` one starts) is built once; any
# other file goes to a process of its own choosing, whole. xdist's own ``loadgroup`` marks do
# not work with pytest 9.2 (xdist 3.8 writes the group into ``item._nodeid``, which pytest no
# longer reads), so the grouping is this scheduler's, from the file's name; collection checks
# that the table is complete.
SHARED_SESSION_FIXTURES = {
    "nbgrader": ("test_nbgrader.py", "test_nbgrader_late.py", "test_selfcheck.py"),
    "attention_batch": ("test_class_report.py", "test_cli.py", "test_distributed.py", "test_gradescope.py"),
}
_GROUP_OF_FILE = {name: fixture for fixture, names in SHARED_SESSION_FIXTURES.items() for name in names}


def xdist_group(nodeid):
    """The group a test runs in: its shared fixture's, else its file's."""
    name = Path(nodeid.split("::")[0]).name
    return _GROUP_OF_FILE.get(name, name)


def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtureScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return xdist_group(nodeid)

    return SharedFixtureScheduling(config, log)


# The longest groups start first (the scheduler hands out groups in the order collected, as
# pyproject's --no-loadscope-reorder keeps it: xdist would otherwise re-sort them by their number
# of tests), so that neither process is left with a long one at the end.
LONGEST_FIRST = ("nbgrader", "test_corpus.py", "attention_batch")


def pytest_collection_modifyitems(items):
    """``-m "not slow"`` (the quick loop) leaves out the tests marked ``@pytest.mark.slow``
    (more than ~5 s on a quiet machine) and those that use a slow fixture. A test that uses a
    shared session fixture from a file ``SHARED_SESSION_FIXTURES`` does not list is an error:
    it would build the fixture a second time in the other process."""
    rank = {group: index for index, group in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(xdist_group(item.nodeid), len(rank)))  # stable: files keep their order
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        slow = SLOW_FIXTURES | set(getattr(getattr(item, "module", None), "SLOW_FIXTURES", ()))
        if slow & fixtures:
            item.add_marker(pytest.mark.slow)
        for fixture in fixtures & set(SHARED_SESSION_FIXTURES):
            if item.path.name not in SHARED_SESSION_FIXTURES[fixture]:
                raise pytest.UsageError(f"{item.nodeid} uses the session fixture {fixture!r}: add "
                                        f"{item.path.name!r} to SHARED_SESSION_FIXTURES in tests/conftest.py")


@contextlib.contextmanager
def refused_port():
    """A TCP port of 127.0.0.1 that refuses every connection, chosen at run time and held for the
    block: bound, never listened on, so no other process (a second test suite) can take it."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def run_autograder(*args, cwd=ROOT, timeout=300):
    """``python -m autograder ARGS`` with the interpreter running the tests (the venv's)."""
    # pytest-xdist's workers inherit a COLUMNS that the command would obey: it runs as in a pipe
    env = {**{k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}, "PYTHONUTF8": "1"}
    return subprocess.run([sys.executable, "-m", "autograder", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def attention_batch(tmp_path_factory):
    """The bundled attention examples graded once, in the default language (course.toml's: id)."""
    out = tmp_path_factory.mktemp("reports") / "attention"
    done = run_autograder("grade", EXAMPLES, "--assignment", "attention", "--out", out)
    return done, out


class Background:
    """Slow commands that do not depend on one another, run a few at a time in threads from
    the start, so that one's waiting (a kernel starting, a limit waited out) is filled by
    another's work. A test waits only for the job it reads, and a failed job fails only the
    tests that read it (``result`` re-raises its exception)."""

    def __init__(self, workers=None):
        # One more than the cores: each job is mostly a subprocess starting and importing torch.
        workers = workers or (os.cpu_count() or 1) + 1
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="test-job")
        self._jobs = {}

    def start(self, name, function, *args, **kwargs):
        assert name not in self._jobs, f"two jobs named {name}"
        self._jobs[name] = self._pool.submit(function, *args, **kwargs)

    def result(self, name):
        return self._jobs[name].result()

    def close(self):
        for job in self._jobs.values():
            job.cancel()  # jobs not started yet (an interrupted session); running ones finish
        self._pool.shutdown(wait=True)


@pytest.fixture(scope="session")
def nbgrader(request, tmp_path_factory):
    """Every assignment released by real nbgrader once per session (``.root``), and the nbgrader
    commands of every selected test module, started together at once: a module that defines
    ``start_nbgrader_jobs(root, jobs)`` starts its commands there (test_nbgrader's autograde runs
    beside test_selfcheck's validates) and a test waits for one with ``.result(name)``."""
    from nbgrader_helpers import released_course

    root = released_course(tmp_path_factory.mktemp("nbgrader-course"))
    jobs = Background()
    try:
        for module in dict.fromkeys(getattr(item, "module", None) for item in request.session.items):
            start = getattr(module, "start_nbgrader_jobs", None)
            if start is not None:
                start(root, jobs)
        yield SimpleNamespace(root=root, result=jobs.result)
    finally:
        jobs.close()


def course_with(folder, **grading):
    """A copy of the kit's course.toml with some [grading] values changed; returns the course."""
    import re

    from autograder import config

    text = Path(config.DEFAULT_PATH).read_text()
    for key, value in grading.items():
        text, count = re.subn(rf"(?m)^{key} = \S+", f"{key} = {value}", text)
        assert count == 1, f"course.toml has no single '{key} = ...' line"
    path = Path(folder) / "course.toml"
    path.write_text(text)
    return config.load(path)
