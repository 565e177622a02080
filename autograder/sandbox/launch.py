"""Start the sandbox zygote process (standard library only).

Kept free of torch, numpy and the kit's heavy modules so that the command line can start
the zygote first thing and let it import torch on another core while the grader imports
its own dependencies. ``process.Zygote`` then waits for it to be ready.
"""

import atexit
import fcntl
import importlib.util
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import sysconfig
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


def stdlib_dirs():
    """The standard library (with its compiled modules, lib-dynload)."""
    paths = sysconfig.get_paths()
    found = {paths["stdlib"], paths["platstdlib"] if Path(paths["platstdlib"], "os.py").exists() else None}
    found |= {p for p in sys.path if Path(p).name == "lib-dynload"}
    return sorted({str(Path(p).resolve()) for p in found if p and Path(p).is_dir()})


def python_paths():
    """What a worker needs to read of the Python installation: the standard library and the
    site folders of torch and numpy (it never runs the interpreter's executable: it is a fork)."""
    return sorted({*stdlib_dirs(), *site_dirs()})


def python_secrets():
    """Folders inside ``python_paths()`` that a worker has no business reading: other site
    folders (e.g. the base interpreter's site-packages inside its standard library), and a
    copy of the kit installed in torch's site folder, whichever copy is running."""
    kept = set(site_dirs())
    others = [p for root in stdlib_dirs()
              for p in (Path(root) / "site-packages", Path(root) / "dist-packages")]
    copies = [Path(site) / name for site in kept for name in ("autograder", "solutions")]  # any kit
    return sorted({str(p.resolve()) for p in (*others, *copies)
                   if p.is_dir() and str(p.resolve()) not in kept})


def install_traces():
    """Files in the site folders that name where the kit's checkout lies (an editable install's
    finder and .pth, ``direct_url.json`` of anything installed from a local folder): the
    workers read them as empty."""
    found = []
    for site in site_dirs():
        folder = Path(site)
        for pattern in ("__editable__*", "*.egg-link", "*.dist-info/direct_url.json"):
            found += [str(p.resolve()) for p in folder.glob(pattern) if p.is_file()]
    return sorted(found)


SCRATCH_PREFIX, SPOOL_PREFIX = "autograder-scratch-", "autograder-spool-"
_held_folders = {}  # path -> the descriptor whose lock says its owner lives (``private_folder``)


def private_folder(prefix):
    """A new folder of this process in the temporary folder, named ``prefix...``, locked
    (``flock`` on the folder itself) for as long as this process, or a process it forked
    without exec (grading processes, Dask workers), lives. First it removes the folders of that
    prefix whose owners are gone (``sweep_abandoned``): a grader that was killed (SIGKILL, out
    of memory) runs no clean-up, and its folders may hold copies of submissions. Remove it
    with ``remove_private_folder``."""
    sweep_abandoned(prefix)
    # Made under another name and locked before it takes its own: a sweep running meanwhile
    # in another grader never sees it unlocked.
    while True:
        staging = Path(tempfile.mkdtemp(prefix=".autograder-new-"))
        handle = os.open(staging, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.flock(handle, fcntl.LOCK_EX)
        folder = staging.with_name(prefix + staging.name.rsplit("-", 1)[-1])
        if not os.path.lexists(folder):  # rename() would replace an empty folder of that name
            try:
                os.rename(staging, folder)
                _held_folders[str(folder)] = handle
                return folder
            except OSError:
                pass
        os.close(handle)
        os.rmdir(staging)


def remove_private_folder(folder):
    """Remove a folder of ``private_folder`` and release its lock."""
    shutil.rmtree(folder, ignore_errors=True)
    handle = _held_folders.pop(str(folder), None)
    if handle is not None:
        os.close(handle)


def sweep_abandoned(prefix):
    """Remove this user's folders ``prefix...`` in the temporary folder that no living process
    holds locked (their grader was killed, or predates the locks)."""
    for path in Path(tempfile.gettempdir()).glob(prefix + "*"):
        try:
            handle = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue  # not a folder, a link, gone meanwhile
        try:
            if os.fstat(handle).st_uid != os.getuid():
                continue
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # its owner lives
        else:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(handle)


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
        self.scratch_root = private_folder(SCRATCH_PREFIX)
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.hidden = frozenset(str(p) for p in hide)  # beside the kit's own paths
        settings = {"namespaces": True, "uid_base": self.uid_base, "uid_block": UID_BLOCK,
                    "limits": {}, "hide": [*kit_paths(), *python_secrets(), *install_traces(), *hide],
                    "keep": python_paths(), "site_dirs": site_dirs(), "stdlib_dirs": stdlib_dirs(),
                    "parent": os.getpid(),
                    "fallback_scratch": str(self.scratch_root / "probe"),
                    # AUTOGRADER_SECCOMP=off: no system-call filter, as on a kernel without
                    # seccomp (the run says it is degraded); for testing that mode
                    "seccomp_wanted": os.environ.get("AUTOGRADER_SECCOMP", "on") != "off"}
        # Settings travel in a memfd, not on the command line: every worker is a fork of the
        # zygote and could read the zygote's command line in its /proc/1/cmdline.
        settings_fd = os.memfd_create("autograder-zygote-settings", 0)
        try:
            os.write(settings_fd, json.dumps(settings).encode())  # memfd: never a short write
            os.lseek(settings_fd, 0, os.SEEK_SET)
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(ZYGOTE_SCRIPT), str(theirs.fileno()), str(settings_fd)],
                stdin=subprocess.DEVNULL, pass_fds=(theirs.fileno(), settings_fd), cwd=self.scratch_root,
                env={"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "LANG": "C.UTF-8"},
                start_new_session=True)
        finally:
            os.close(settings_fd)
            theirs.close()


_early = None
_early_lock = threading.Lock()
_spool_root = None


def spool_root():
    """A private folder of this process (made once, removed at its exit) for copies of
    submissions that the processes it forks write (a Dask LocalCluster's workers,
    ``grading.distributed``): pass it to ``start_early`` so that the zygote's workers never
    see it."""
    global _spool_root
    with _early_lock:
        if _spool_root is None:
            _spool_root = str(private_folder(SPOOL_PREFIX))  # mkdtemp's: mode 0700
            atexit.register(remove_private_folder, _spool_root)
        return _spool_root


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


def peek_early():
    """The zygote started by ``start_early`` and not yet taken, or None."""
    with _early_lock:
        return _early


def early_starting():
    """Whether the zygote started by ``start_early`` is not taken yet and has not yet said
    whether it is ready: the time the first worker's start would wait for it, which the
    grader can spend on work of its own (``grader.warm_up``)."""
    launch = peek_early()
    if launch is None:
        return False
    try:
        readable, _, _ = select.select([launch.control], [], [], 0)  # "ready", or closed
    except (OSError, ValueError):
        return False
    return not readable


def forget_early():
    """In a process forked from the one that started it: leave the early zygote to that one
    (nothing is closed: the sockets and the process are the parent's)."""
    global _early
    _early = None
