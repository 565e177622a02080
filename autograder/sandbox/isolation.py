"""Shut a freshly forked worker in before it runs student code.

The zygote makes each worker the first process (PID 1) of a new PID namespace
(``prepare_pid_namespace`` before it forks), so that killing the worker kills
every process it ever started, whatever they do (``setsid``, double forks,
ignored signals). The worker then, in ``isolate``:

1. enters new mount, IPC and UTS namespaces and its slot's network namespace (an empty one
   the zygote made for that slot, ``empty_network_namespace``; a new one where it could not);
2. builds its file system from an **allow-list**: a fresh, empty tmpfs becomes
   its root and receives, read-only, only the Python standard library and the
   site folders of torch and numpy, the folders of the shared libraries the
   zygote has loaded (``/usr/lib/<arch>``: what a lazily imported extension
   module such as ``_ctypes`` needs), ``/etc/ld.so.cache`` (how the loader finds
   them), ``/dev/null``, ``/dev/zero`` and ``/dev/urandom``, a small private
   ``/dev/shm``, its own scratch tmpfs at ``/tmp`` and a fresh ``/proc`` of its
   own PID namespace; it then ``pivot_root``s into it and detaches the host's
   tree. Whatever lives elsewhere on the machine (other copies of the kit,
   class folders, world-writable host folders) simply does not exist for it;
   the kit's own folders and the batch's folders are covered with empty
   read-only tmpfs mounts where they lie inside an allowed folder;
3. becomes its own unprivileged uid, sets its parent-death signal *after* that
   (a uid change clears it) and checks that the zygote is still alive;
4. gets ``no_new_privs``, closes every other file descriptor and takes hard
   resource limits (CPU: the hard limit a little above the soft one, so
   ``SIGXCPU`` comes first; all others hard == soft).

Runs in the forked child only; imports nothing but the standard library so the
zygote can load it as a plain script. Where the machine cannot give
namespaces or another uid, the caller learns it from the zygote's probe and
says so loudly; limits always apply.
"""

import ctypes
import os
import platform
import resource
import select
import signal

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41, "riscv64": 41, "ppc64le": 203,
                  "s390x": 217}
CPU_HARD_GAP = 2  # seconds between SIGXCPU (soft CPU limit) and SIGKILL (hard)

# What every worker gets besides the Python installation (see the module docstring).
DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom")
SYSTEM_FILES = ("/etc/ld.so.cache",)
TMP_SIZE, SHM_SIZE = "64m", "16m"

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class IsolationError(OSError):
    pass


def _check(result, what):
    if result != 0:
        errno = ctypes.get_errno()
        raise IsolationError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source, target, fstype, flags, data=None):
    _check(_libc.mount(source.encode() if source else None, target.encode(),
                       fstype.encode() if fstype else None, ctypes.c_ulong(flags),
                       data.encode() if data else None), f"mount {target}")


def _inside(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


# -- PID namespace (called in the zygote, before each fork) -----------------------------
def own_pid_namespace():
    """A handle on the caller's PID namespace, for ``prepare_pid_namespace``."""
    return os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)


def prepare_pid_namespace(own_namespace_fd):
    """Make the caller's next child the first process (PID 1) of a new PID namespace.

    ``unshare(CLONE_NEWPID)`` only changes where children go and refuses to run twice while
    children still go elsewhere: point them back at our own namespace first (``setns``)."""
    _check(_libc.setns(own_namespace_fd, CLONE_NEWPID), "setns pid")
    _check(_libc.unshare(CLONE_NEWPID), "unshare pid")


def restore_pid_namespace(own_namespace_fd):
    _libc.setns(own_namespace_fd, CLONE_NEWPID)


# -- network namespace (made in the zygote, once per slot) -------------------------------
def empty_network_namespace():
    """A handle on a new network namespace that holds nothing but its loopback device, down,
    made by the caller (root) without staying in it.

    Workers of one slot enter the same one (``settings["network_fd"]``) instead of each
    making and tearing down its own (~2 ms, ~3 ms of the kernel's time per worker). It is
    as empty for each of them: a slot's workers run one after another, every process of the
    last one is dead (its PID namespace) before the next starts, and what a network
    namespace could keep (interfaces, routes, filters, sysctls) needs CAP_NET_ADMIN, which
    no worker has. An IPC namespace is still made per worker: SysV objects outlive their
    processes."""
    host = os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        _check(_libc.unshare(CLONE_NEWNET), "unshare net")
        try:
            return os.open("/proc/self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        finally:
            _check(_libc.setns(host, CLONE_NEWNET), "setns net")
    finally:
        os.close(host)


# -- the file system -------------------------------------------------------------------
def _open_path(path):
    return os.open(path, os.O_PATH | os.O_CLOEXEC)


def _bind(handle, target, flags):
    """Bind what ``handle`` (an O_PATH descriptor opened before anything was mounted over
    the host's tree) refers to onto ``target``; ``flags`` for the remount (e.g. read-only).
    Not recursive: mounts below a kept folder are not carried along."""
    _mount(f"/proc/self/fd/{handle}", target, None, MS_BIND)
    if flags:
        _mount(None, target, None, MS_BIND | MS_REMOUNT | flags)


def _make_file(path):
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))


def _temporary_mount_point():
    for candidate in ("/tmp", "/mnt", "/media", "/srv", "/opt"):
        if os.path.isdir(candidate) and not os.path.islink(candidate):
            return candidate
    raise IsolationError(0, "no folder to build the worker's root in")


def _build_root(settings):
    """Build the allow-listed tree in a fresh tmpfs and ``pivot_root`` into it."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing we mount travels back to the host
    os.umask(0o022)
    keep = sorted({p for p in settings["keep"] if os.path.isdir(p)}, key=len)
    files = [p for p in settings.get("keep_files", SYSTEM_FILES) if os.path.isfile(p)]
    devices = [p for p in settings.get("devices", DEVICES) if os.path.exists(p)]
    handles = {p: _open_path(p) for p in (*keep, *files, *devices)}
    # Top-level links such as /lib -> usr/lib (ld.so.cache names /lib/x86_64-linux-gnu/...).
    links = {}
    for name in os.listdir("/"):
        path = "/" + name
        if os.path.islink(path):
            target = os.path.realpath(path)
            if any(_inside(k, target) for k in keep):
                links[path] = os.readlink(path)

    root = _temporary_mount_point()
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=755")
    for path in keep:  # parents before children: a nested mount point already exists read-only
        target = root + path
        if not os.path.isdir(target):
            os.makedirs(target, mode=0o755)
        _bind(handles[path], target, MS_RDONLY | MS_NOSUID | MS_NODEV)
    for path in files:
        _make_file(root + path)
        _bind(handles[path], root + path, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path, target in links.items():
        os.symlink(target, root + path)
    # Secrets inside an allowed folder (the kit installed in site-packages, the batch's
    # folders inside the Python install): empty, read-only.
    for path in sorted(set(settings.get("hide", ())), key=len):
        if any(_inside(path, k) for k in keep) and os.path.isdir(root + path):
            _mount("tmpfs", root + path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "size=4k,nr_inodes=1,mode=755")

    os.makedirs(root + "/dev", mode=0o755)
    _mount("tmpfs", root + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,nr_inodes=64,mode=755")
    for path in devices:
        _make_file(root + path)
        _bind(handles[path], root + path, MS_NOSUID | MS_NOEXEC)
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, f"{root}/dev/{name}")
    os.mkdir(root + "/dev/shm")
    _mount("tmpfs", root + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
           f"size={SHM_SIZE},mode=1777")
    _mount(None, root + "/dev", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)

    os.mkdir(root + "/proc")  # we are PID 1 of our own namespace: this /proc shows only it
    _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # The worker's own writable tmpfs: /tmp, unless the Python install lives under /tmp.
    tmp = "/scratch" if any(_inside(k, "/tmp") for k in keep) else "/tmp"
    os.mkdir(root + tmp)
    _mount("tmpfs", root + tmp, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, f"size={TMP_SIZE},mode=1777")
    scratch = tmp + "/sandbox"
    os.mkdir(root + scratch, 0o700)
    for handle in handles.values():
        os.close(handle)

    machine = platform.machine()
    if machine not in SYS_PIVOT_ROOT:
        raise IsolationError(0, f"pivot_root: unknown system call number on {machine}")
    os.chdir(root)
    # pivot_root(".", "."): the old root ends up on top of the new one; detach it.
    _check(_libc.syscall(ctypes.c_long(SYS_PIVOT_ROOT[machine]), b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", MNT_DETACH), "detach the host's tree")
    os.chdir("/")
    _mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    return scratch


# -- uid, limits ------------------------------------------------------------------------
def _drop_privileges(uid):
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


def _set_death_signal(parent_fd):
    """Die with the zygote. Set after the uid change (which clears it), then check that the
    zygote did not die before it was set (its pidfd is readable once it exited)."""
    _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")
    if parent_fd is not None:
        if select.select([parent_fd], [], [], 0)[0]:
            os._exit(70)
        os.close(parent_fd)


def hard_limits(limits, current=resource.getrlimit):
    """{name: (soft, hard)}: hard == soft, except CPU (a small gap: SIGXCPU, then SIGKILL);
    never above a hard limit we already have (root here cannot raise one)."""
    result = {}
    for name, value in limits.items():
        which = getattr(resource, name)
        _, hard = current(which)
        soft = value if hard == resource.RLIM_INFINITY else min(value, hard)
        new_hard = soft + CPU_HARD_GAP if name == "RLIMIT_CPU" else soft
        if hard != resource.RLIM_INFINITY:
            new_hard = min(new_hard, hard)
        result[name] = (soft, new_hard)
    return result


def _set_limits(limits):
    for name, (soft, hard) in hard_limits(limits).items():
        resource.setrlimit(getattr(resource, name), (soft, hard))


def isolate(settings, keep_fds, parent_fd=None):
    """Called in the forked child. ``settings`` decides how far isolation goes; ``parent_fd``
    is a pidfd of the zygote (inherited), to learn whether it died before we could notice."""
    os.setsid()
    for sig in (signal.SIGCHLD, signal.SIGTERM):  # the zygote's own handlers
        signal.signal(sig, signal.SIG_DFL)
    if settings["namespaces"]:
        if os.getpid() != 1:
            raise IsolationError(0, "the worker is not the first process of a new PID namespace")
        network = settings.get("network_fd")
        _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS
                             | (CLONE_NEWNET if network is None else 0)), "unshare")
        if network is not None:
            _check(_libc.setns(network, CLONE_NEWNET), "setns net")
        scratch = _build_root(settings)
    else:
        scratch = settings["scratch"]
        os.makedirs(scratch, exist_ok=True)
    uid = settings.get("uid")
    if uid is not None:
        os.chown(scratch, uid, uid)
        _drop_privileges(uid)
    _set_death_signal(parent_fd)
    os.chdir(scratch)
    os.environ.clear()
    tmp = os.path.dirname(scratch) if settings["namespaces"] else scratch
    os.environ.update({"HOME": scratch, "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1",
                       "LANG": "C.UTF-8", "TMPDIR": tmp})
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    previous = 2
    for fd in sorted(keep_fds) + [resource.getrlimit(resource.RLIMIT_NOFILE)[0]]:
        os.closerange(previous + 1, fd)
        previous = fd
    _set_limits(settings["limits"])


# -- clean-up (called in the zygote) ------------------------------------------------------
def kill_uids(uids):
    """SIGKILL every process of these uids, wherever it is (a backstop behind the PID
    namespaces). ``kill(-1)`` as that uid reaches exactly the processes the uid owns; the
    kernel refuses a fork to a process with SIGKILL pending, so nothing slips through.
    The caller keeps root as its saved uid and returns to it after each uid."""
    for uid in uids:
        os.setresuid(uid, uid, 0)
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass  # nothing of that uid is left
        finally:
            os.setresuid(0, 0, 0)
