"""Start the sandbox zygote process (standard library only).

Kept free of torch, numpy and the kit's heavy modules so that the command line can start
the zygote first thing and let it import torch on another core while the grader imports
its own dependencies. ``process.Zygote`` then waits for it to be ready.
"""

import fcntl
import importlib.util
import json
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ZYGOTE_SCRIPT = Path(__file__).with_name("zygote.py")
UID_FIRST, UID_BLOCK, UID_BLOCKS = 61000, 64, 32  # uid ranges a run may claim for its workers


def _package_folder(name):
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"cannot find the {name} package")
    return Path(list(spec.submodule_search_locations)[0]).resolve()


def site_dirs():
    """The folders torch and numpy live in; the workers get these and nothing else."""
    return list(dict.fromkeys(str(_package_folder(name).parent) for name in ("torch", "numpy")))


def kit_paths():
    """What a worker must never see: the grader, the reference and the course files."""
    kit = _package_folder("autograder")
    paths = {kit, _package_folder("solutions")}
    if (kit.parent / "course.toml").exists() or (kit.parent / "pyproject.toml").exists():
        paths.add(kit.parent)  # a source checkout: hide all of it (hidden tests, course.toml)
    return sorted(str(p) for p in paths)


def python_paths():
    """What a worker needs to read: the interpreter's installation and torch's."""
    return sorted({str(Path(p).resolve()) for p in (sys.prefix, sys.base_prefix, *site_dirs())})


def claim_uid_block():
    """A block of unprivileged uids no other grader run on this machine uses (RLIMIT_NPROC
    counts per uid, and clean-up kills by uid): held with a lock file for the process's life."""
    for block in range(UID_BLOCKS):
        base = UID_FIRST + block * UID_BLOCK
        handle = open(Path(tempfile.gettempdir()) / f"autograder-uids-{base}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        return base, handle
    raise RuntimeError(f"all {UID_BLOCKS} sandbox uid blocks are in use by other grader runs")


class Launch:
    """A zygote process that was started and has not necessarily said it is ready yet."""

    def __init__(self, hide=()):
        self.uid_base, self.uid_lock = claim_uid_block()
        self.scratch_root = Path(tempfile.mkdtemp(prefix="autograder-scratch-"))
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        settings = {"namespaces": True, "uid_base": self.uid_base, "limits": {},
                    "hide": [*kit_paths(), *hide], "keep": python_paths(),
                    "fallback_scratch": str(self.scratch_root / "probe")}
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-S", str(ZYGOTE_SCRIPT), str(theirs.fileno()),
             json.dumps(settings), *site_dirs()],
            stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(),), cwd=self.scratch_root,
            env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "LANG": "C.UTF-8"},
            start_new_session=True)
        theirs.close()


_early = None
_early_lock = threading.Lock()


def start_early(hide=()):
    """Start this process's zygote now; ``process.shared_zygote()`` will adopt it. ``hide``:
    more folders its workers must not see (the batch's submissions and output folder)."""
    global _early
    with _early_lock:
        if _early is None:
            _early = Launch(hide=[str(Path(p).resolve()) for p in hide])


def take_early():
    """The zygote started by ``start_early`` (once), or None."""
    global _early
    with _early_lock:
        launch, _early = _early, None
        return launch
