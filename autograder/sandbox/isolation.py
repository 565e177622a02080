"""Shut a freshly forked worker in before it runs student code.

In order: new namespaces (mount, network, IPC, UTS, PID), a private view of the
file system in which the kit, the outputs and the submissions are covered by
empty tmpfs mounts and only the Python installation stays readable (read-only),
a dedicated unprivileged uid, and resource limits. Runs in the forked child
only; imports nothing but the standard library so the zygote can load it as a
plain script. Where the machine cannot give namespaces or another uid, the
caller learns it from ``probe()`` and says so loudly; limits always apply.
"""

import ctypes
import os
import resource
import signal

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT = 1, 2, 4, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
# World-writable or private places a student could read or leave files in.
ALWAYS_HIDDEN = ("/tmp", "/var/tmp", "/dev/shm", "/root", "/home", "/run/user")
# Never covered, even when asked (e.g. `autograder grade /`): the worker needs them.
SYSTEM = {"/", "/proc", "/dev", "/sys", "/usr", "/etc", "/lib", "/lib64", "/bin", "/sbin", "/var", "/run"}

_libc = ctypes.CDLL(None, use_errno=True)


class IsolationError(OSError):
    pass


def _check(result, what):
    if result != 0:
        errno = ctypes.get_errno()
        raise IsolationError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source, target, fstype, flags, data=None):
    _check(_libc.mount(source.encode() if source else None, target.encode(),
                       fstype.encode() if fstype else None, flags,
                       data.encode() if data else None), f"mount {target}")


def _cover(path):
    if os.path.isdir(path) and not os.path.islink(path):
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=755")


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _private_filesystem(hide, keep):
    """Cover ``hide`` with empty tmpfs; bind ``keep`` (the Python install) back read-only."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    keep = [k for k in keep if os.path.isdir(k)]
    handles = {k: os.open(k, os.O_PATH | os.O_DIRECTORY) for k in keep}
    covered = sorted({*ALWAYS_HIDDEN, *hide} - SYSTEM, key=len)
    nested = [h for h in covered if any(_inside(h, k) and h != k for k in keep)]
    for path in covered:
        if path not in nested:
            _cover(path)
    for path, handle in handles.items():
        os.makedirs(path, exist_ok=True)
        _mount(f"/proc/self/fd/{handle}", path, None, MS_BIND | MS_REC)
        _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC)
        os.close(handle)
    for path in nested:  # secrets inside a kept tree (e.g. the kit installed in site-packages)
        _cover(path)


def _enter_pid_namespace():
    """unshare(CLONE_NEWPID) applies to children: fork once more and become PID 1 there,
    so that every process the student starts dies with the worker."""
    child = os.fork()
    if child:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        _, status = os.waitpid(child, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _set_limits(limits):
    for name, value in limits.items():
        which = getattr(resource, name)
        soft, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        # CPU: soft limit sends SIGXCPU; the hard one stays, so SIGKILL follows only later.
        resource.setrlimit(which, (value, hard if name == "RLIMIT_CPU" else value))


def isolate(settings, keep_fds):
    """Called in the forked child. ``settings`` decides how far isolation goes."""
    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    scratch = "/tmp/sandbox"
    if settings["namespaces"]:
        flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID
        _check(_libc.unshare(flags), "unshare")
        _private_filesystem(settings["hide"], settings["keep"])
        _enter_pid_namespace()
    else:
        scratch = settings["scratch"]
    os.makedirs(scratch, exist_ok=True)
    uid = settings.get("uid")
    if uid is not None:
        os.chown(scratch, uid, uid)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    os.chdir(scratch)
    os.environ.clear()
    os.environ.update({"HOME": scratch, "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1",
                       "LANG": "C.UTF-8"})
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    previous = 2
    for fd in sorted(keep_fds) + [resource.getrlimit(resource.RLIMIT_NOFILE)[0]]:
        os.closerange(previous + 1, fd)
        previous = fd
    _set_limits(settings["limits"])
