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
   ``SIGXCPU`` comes first; all others hard == soft);
5. joins a session keyring of its own and, last, installs the system-call filter
   (``SECCOMP_ALLOW``: Docker's default profile, stricter in a few places), built once in
   the zygote (``seccomp_program``): from then on ``keyctl``, ``ptrace``, ``bpf``, ``mount``,
   ``unshare`` and the rest fail with EPERM (``clone3`` with ENOSYS, so that glibc uses
   ``clone``). Where the machine has no libseccomp or the kernel no seccomp, the zygote's
   probe says so and the mode is reported as degraded.

Before any of this, the zygote itself moves into a tree of neutral paths
(``restart_in_neutral_tree``): the folders a worker keeps are ``/sandbox/python/...`` and
``/sandbox/site-packages``, not where they lie on the host.

Runs in the forked child only (and once in the zygote, for its neutral tree); imports
nothing but the standard library so the zygote can load it as a plain script. Where the machine cannot give
namespaces or another uid, the caller learns it from the zygote's probe and
says so loudly; limits always apply.
"""

import ctypes
import errno as errnos
import os
import platform
import resource
import select
import signal
import stat
import sys

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

# -- the system-call filter -----------------------------------------------------------------
# Modelled on Docker's default seccomp profile (moby/profiles, seccomp/default.json): an
# allow-list, everything else fails with EPERM. As there, for a process without capabilities:
# no mount or namespace calls (mount, umount2, pivot_root, unshare, setns, clone with a
# CLONE_NEW* flag), no bpf, perf_event_open, fanotify_init, open_by_handle_at, no kernel
# keyrings (add_key, keyctl, request_key), no userfaultfd, no io_uring, no kexec or module
# loading, no clock or quota changes, personality only to its harmless values, socket of
# any family but AF_ALG and AF_VSOCK, clone3 answered ENOSYS. Stricter than Docker: ptrace,
# process_vm_readv and process_vm_writev are refused too (a worker has nothing to debug).
# Names this libseccomp does not know (newer system calls) are left out: they fail too.
SECCOMP_ALLOW = """
accept accept4 access adjtimex alarm bind brk cachestat capget capset chdir chmod chown
chown32 clock_adjtime clock_adjtime64 clock_getres clock_getres_time64 clock_gettime
clock_gettime64 clock_nanosleep clock_nanosleep_time64 close close_range connect
copy_file_range creat dup dup2 dup3 epoll_create epoll_create1 epoll_ctl epoll_ctl_old
epoll_pwait epoll_pwait2 epoll_wait epoll_wait_old eventfd eventfd2 execve execveat exit
exit_group faccessat faccessat2 fadvise64 fadvise64_64 fallocate fanotify_mark fchdir fchmod
fchmodat fchmodat2 fchown fchown32 fchownat fcntl fcntl64 fdatasync fgetxattr flistxattr flock
fork fremovexattr fsetxattr fstat fstat64 fstatat64 fstatfs fstatfs64 fsync ftruncate
ftruncate64 futex futex_requeue futex_time64 futex_wait futex_waitv futex_wake futimesat getcpu
getcwd getdents getdents64 getegid getegid32 geteuid geteuid32 getgid getgid32 getgroups
getgroups32 getitimer getpeername getpgid getpgrp getpid getppid getpriority getrandom
getresgid getresgid32 getresuid getresuid32 getrlimit get_robust_list getrusage getsid
getsockname getsockopt get_thread_area gettid gettimeofday getuid getuid32 getxattr getxattrat
inotify_add_watch inotify_init inotify_init1 inotify_rm_watch io_cancel ioctl io_destroy
io_getevents io_pgetevents io_pgetevents_time64 ioprio_get ioprio_set io_setup io_submit ipc
kill landlock_add_rule landlock_create_ruleset landlock_restrict_self lchown lchown32 lgetxattr
link linkat listen listmount listxattr listxattrat llistxattr _llseek lremovexattr lseek
lsetxattr lstat lstat64 madvise map_shadow_stack membarrier memfd_create memfd_secret mincore
mkdir mkdirat mknod mknodat mlock mlock2 mlockall mmap mmap2 mprotect mq_getsetattr mq_notify
mq_open mq_timedreceive mq_timedreceive_time64 mq_timedsend mq_timedsend_time64 mq_unlink
mremap mseal msgctl msgget msgrcv msgsnd msync munlock munlockall munmap name_to_handle_at
nanosleep newfstatat _newselect open openat openat2 pause pidfd_open pidfd_send_signal pipe
pipe2 pkey_alloc pkey_free pkey_mprotect poll ppoll ppoll_time64 prctl pread64 preadv preadv2
prlimit64 process_mrelease pselect6 pselect6_time64 pwrite64 pwritev pwritev2 read readahead
readlink readlinkat readv recv recvfrom recvmmsg recvmmsg_time64 recvmsg remap_file_pages
removexattr removexattrat rename renameat renameat2 restart_syscall riscv_hwprobe rmdir rseq
rt_sigaction rt_sigpending rt_sigprocmask rt_sigqueueinfo rt_sigreturn rt_sigsuspend
rt_sigtimedwait rt_sigtimedwait_time64 rt_tgsigqueueinfo sched_getaffinity sched_getattr
sched_getparam sched_get_priority_max sched_get_priority_min sched_getscheduler
sched_rr_get_interval sched_rr_get_interval_time64 sched_setaffinity sched_setattr
sched_setparam sched_setscheduler sched_yield seccomp select semctl semget semop semtimedop
semtimedop_time64 send sendfile sendfile64 sendmmsg sendmsg sendto setfsgid setfsgid32
setfsuid setfsuid32 setgid setgid32 setgroups setgroups32 setitimer setpgid setpriority
setregid setregid32 setresgid setresgid32 setresuid setresuid32 setreuid setreuid32 setrlimit
set_robust_list setsid setsockopt set_thread_area set_tid_address setuid setuid32 setxattr
setxattrat shmat shmctl shmdt shmget shutdown sigaltstack signalfd signalfd4 sigprocmask
sigreturn socketcall socketpair splice stat stat64 statfs statfs64 statmount statx symlink
symlinkat sync sync_file_range syncfs sysinfo tee tgkill time timer_create timer_delete
timer_getoverrun timer_gettime timer_gettime64 timer_settime timer_settime64 timerfd_create
timerfd_gettime timerfd_gettime64 timerfd_settime timerfd_settime64 times tkill truncate
truncate64 ugetrlimit umask uname unlink unlinkat uretprobe utime utimensat utimensat_time64
utimes vfork vmsplice wait4 waitid waitpid write writev
""".split()
SECCOMP_ALLOW_BY_ARCH = {  # as Docker's profile, per architecture
    "x86_64": ("arch_prctl", "modify_ldt"),
    "aarch64": ("sync_file_range2",), "arm64": ("sync_file_range2",),
    "ppc64le": ("sync_file_range2", "swapcontext"),
    "s390x": ("s390_pci_mmio_read", "s390_pci_mmio_write", "s390_runtime_instr"),
    "riscv64": ("riscv_flush_icache",),
}
PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)  # PER_LINUX, +UNAME26, +ADDR_NO_RANDOMIZE, query
AF_ALG, AF_VSOCK = 38, 40
CLONE_NAMESPACE_FLAGS = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_CMP_LT, SCMP_CMP_EQ, SCMP_CMP_GT, SCMP_CMP_MASKED_EQ = 2, 4, 6, 7
SCMP_FLTATR_CTL_OPTIMIZE = 8
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW = 1, 4
SYS_SECCOMP = {"x86_64": 317, "aarch64": 277, "arm64": 277, "riscv64": 277, "ppc64le": 358, "s390x": 348}
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "arm64": 219, "riscv64": 219, "ppc64le": 271, "s390x": 280}
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_CLEAR, KEYCTL_UNLINK, KEYCTL_GET_PERSISTENT = 1, 7, 9, 22
KEY_SPEC_THREAD_KEYRING, KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -1, -4, -5


def _scmp_errno(code):
    return 0x00050000 | (code & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def seccomp_program():
    """The workers' system-call filter (see ``SECCOMP_ALLOW``) as a classic BPF program
    (bytes), compiled once with libseccomp; each worker only hands it to the kernel
    (``install_seccomp``). Raises OSError where libseccomp is missing or refuses."""
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError as error:
        raise OSError(errnos.ENOENT, f"libseccomp is not installed ({error})") from None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                           ctypes.POINTER(_ArgCmp)]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    lib.seccomp_export_bpf.argtypes = [ctypes.c_void_p, ctypes.c_int]
    context = lib.seccomp_init(_scmp_errno(errnos.EPERM))
    if not context:
        raise OSError(errnos.EINVAL, "libseccomp: seccomp_init failed")

    def add(action, name, *conditions):
        number = lib.seccomp_syscall_resolve_name(name.encode())
        if number < 0:  # unknown here, or not a system call of this architecture
            return
        array = (_ArgCmp * max(1, len(conditions)))(*[_ArgCmp(*c) for c in conditions])
        result = lib.seccomp_rule_add_array(context, action, number, len(conditions), array)
        if result < 0:
            raise OSError(-result, f"libseccomp: cannot add the rule for {name}")

    machine = platform.machine()
    read, write = os.pipe()
    try:
        lib.seccomp_attr_set(context, SCMP_FLTATR_CTL_OPTIMIZE, 2)  # a binary tree (libseccomp >= 2.5)
        for name in (*SECCOMP_ALLOW, *SECCOMP_ALLOW_BY_ARCH.get(machine, ())):
            add(SCMP_ACT_ALLOW, name)
        for value in PERSONALITIES:
            add(SCMP_ACT_ALLOW, "personality", (0, SCMP_CMP_EQ, value, 0))
        add(SCMP_ACT_ALLOW, "socket", (0, SCMP_CMP_LT, AF_ALG, 0))
        add(SCMP_ACT_ALLOW, "socket", (0, SCMP_CMP_EQ, AF_ALG + 1, 0))
        add(SCMP_ACT_ALLOW, "socket", (0, SCMP_CMP_GT, AF_VSOCK, 0))
        flags_argument = 1 if machine.startswith("s390") else 0  # s390's clone takes flags second
        add(SCMP_ACT_ALLOW, "clone", (flags_argument, SCMP_CMP_MASKED_EQ, CLONE_NAMESPACE_FLAGS, 0))
        add(_scmp_errno(errnos.ENOSYS), "clone3")  # glibc then falls back to clone
        result = lib.seccomp_export_bpf(context, write)
        if result < 0:
            raise OSError(-result, "libseccomp: cannot export the filter")
        os.close(write)
        write = None
        chunks = []
        while chunk := os.read(read, 1 << 16):
            chunks.append(chunk)
    finally:
        lib.seccomp_release(context)
        os.close(read)
        if write is not None:
            os.close(write)
    program = b"".join(chunks)
    if not program or len(program) % 8:
        raise OSError(errnos.EINVAL, "libseccomp exported no filter")
    return program


def install_seccomp(program):
    """Hand the filter to the kernel for this process and every thread and child it will
    have; needs ``no_new_privs``. Not forcing the speculative-store-bypass mitigation on the
    worker (SPEC_ALLOW) where the kernel knows the flag: it would slow torch down and guards
    a process against itself."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    number = SYS_SECCOMP.get(platform.machine())
    if number is not None:
        for flags in (SECCOMP_FILTER_FLAG_SPEC_ALLOW, 0):
            if _libc.syscall(ctypes.c_long(number), ctypes.c_ulong(SECCOMP_SET_MODE_FILTER),
                             ctypes.c_ulong(flags), ctypes.byref(fprog)) == 0:
                return
            if ctypes.get_errno() != errnos.EINVAL:
                break
    _check(_libc.prctl(ctypes.c_int(PR_SET_SECCOMP), ctypes.c_ulong(SECCOMP_MODE_FILTER),
                       ctypes.byref(fprog), ctypes.c_ulong(0), ctypes.c_ulong(0)), "seccomp")


def _keyctl(*args):
    number = SYS_KEYCTL.get(platform.machine())
    if number is None:
        return -1
    return _libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))


def join_own_session_keyring():
    """A new, empty session keyring for this process and its children: without it every worker
    shares the zygote's (a channel between workers where keyctl is not filtered)."""
    _keyctl(KEYCTL_JOIN_SESSION_KEYRING, 0)


def clear_keyrings():
    """Empty the caller's uid's user, user-session and persistent keyrings (as that uid): the
    keys a worker of that uid planted there outlive it, and the next student's worker (the
    same uid) would read them. Errors are ignored: a kernel without keys has none to clear."""
    _keyctl(KEYCTL_CLEAR, KEY_SPEC_USER_KEYRING)
    _keyctl(KEYCTL_CLEAR, KEY_SPEC_USER_SESSION_KEYRING)
    persistent = _keyctl(KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_THREAD_KEYRING)
    if persistent >= 0:
        _keyctl(KEYCTL_CLEAR, persistent)
        _keyctl(KEYCTL_UNLINK, persistent, KEY_SPEC_THREAD_KEYRING)


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


def fork(own_namespace_fd=None):
    """fork(); given a handle on the caller's PID namespace, the child is PID 1 of a new one."""
    if own_namespace_fd is None:
        return os.fork()
    prepare_pid_namespace(own_namespace_fd)
    try:
        pid = os.fork()
    except BaseException:
        restore_pid_namespace(own_namespace_fd)
        raise
    if pid:  # the parent's next children go to its own namespace again (never in the child)
        restore_pid_namespace(own_namespace_fd)
    return pid


def probe(settings, own_namespace_fd=None, parent_fd=None):
    """Try ``isolate(settings)`` once in a throwaway child; returns None or why it failed. With
    ``settings["namespaces"]``, ``own_namespace_fd`` is the caller's PID namespace."""
    read_fd, write_fd = os.pipe()
    try:
        pid = fork(own_namespace_fd if settings["namespaces"] else None)
    except OSError as error:
        os.close(read_fd)
        os.close(write_fd)
        return f"{type(error).__name__}: {error}"
    if pid == 0:
        os.close(read_fd)
        try:
            isolate(settings, keep_fds={write_fd}, parent_fd=parent_fd)
            os.write(write_fd, b"ok")
            os._exit(0)
        except BaseException as error:
            os.write(write_fd, f"{type(error).__name__}: {error}".encode()[:500])
            os._exit(1)
    os.close(write_fd)
    answer = b""
    while chunk := os.read(read_fd, 1024):
        answer += chunk
    os.close(read_fd)
    os.waitpid(pid, 0)
    return None if answer == b"ok" else answer.decode(errors="replace")


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


def _cover(root, paths, null_handle):
    """Make what lies at these paths (below ``root``) unreadable: a folder becomes an empty
    read-only tmpfs, a file reads as empty (``/dev/null`` over it)."""
    for path in sorted(set(paths), key=len):
        target = root + path
        if os.path.isdir(target) and not os.path.islink(target):
            _mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                   "size=4k,nr_inodes=1,mode=755")
        elif os.path.isfile(target) and not os.path.islink(target) and null_handle is not None:
            _bind(null_handle, target, MS_RDONLY | MS_NOSUID | MS_NOEXEC)


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
    _cover(root, [p for p in settings.get("hide", ()) if any(_inside(p, k) for k in keep)],
           handles.get("/dev/null"))

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


# -- the zygote's neutral tree (called once, in the zygote, before it imports torch) -----------
NEUTRAL_PYTHON = "/sandbox/python"  # the interpreter: bin/, lib/pythonX.Y (the standard library)
NEUTRAL_SITE = "/sandbox/site-packages"  # torch's and numpy's site folder(s): -2, -3, ... for more
NEUTRAL_SCRIPTS = "/sandbox/worker"  # copies of the scripts the zygote runs
SCRIPTS = ("zygote.py", "isolation.py", "worker.py", "wire.py", "tracing.py", "meta_device.py")
SYSTEM_LIBRARIES = ("/usr/lib", "/usr/lib64", "/usr/lib32", "/usr/local/lib", "/lib", "/lib64", "/lib32")


def neutral_paths(settings, libraries):
    """{host folder or file: its path in the neutral tree}: the standard library, the site
    folders of torch and numpy, the interpreter and its shared library (``libraries``: the
    files this process has mapped). Raises OSError for a layout it cannot mirror."""
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    stdlib_dirs = [os.path.realpath(p) for p in settings["stdlib_dirs"]]
    main = [p for p in stdlib_dirs if os.path.isfile(os.path.join(p, "os.py"))]
    if len(main) != 1:
        raise OSError(0, f"cannot tell the standard library among {stdlib_dirs}")
    stdlib = f"{NEUTRAL_PYTHON}/lib/{version}"
    mapping = {main[0]: stdlib, os.path.realpath(sys.executable): f"{NEUTRAL_PYTHON}/bin/{version}"}
    for path in stdlib_dirs:
        if not _inside(path, main[0]):
            if os.path.basename(path) != "lib-dynload":
                raise OSError(0, f"a standard-library folder outside the standard library: {path}")
            mapping[path] = f"{stdlib}/lib-dynload"
    for path in libraries:
        if os.path.basename(path).startswith("libpython"):
            mapping[os.path.realpath(path)] = f"{NEUTRAL_PYTHON}/lib/{os.path.basename(path)}"
    sites = [os.path.realpath(p) for p in settings["site_dirs"]]
    for number, path in enumerate(p for p in sites if translate(p, mapping) is None):
        mapping[path] = NEUTRAL_SITE + (f"-{number + 1}" if number else "")
    return mapping


def translate(path, mapping):
    """``path``'s place in the neutral tree, or None if it is not there."""
    path = os.path.realpath(path)
    for host in sorted(mapping, key=len, reverse=True):
        if _inside(path, host):
            return mapping[host] + path[len(host):]
    return None


def _mapped_files():
    with open("/proc/self/maps") as maps:
        return {line.split(maxsplit=5)[5].strip().removesuffix(" (deleted)") for line in maps
                if len(line.split(maxsplit=5)) == 6 and line.split(maxsplit=5)[5].startswith("/")}


def restart_in_neutral_tree(settings, control_fd, script_dir):
    """Re-execute this process (the zygote, not yet past its standard-library imports) as the
    same interpreter inside a tree of its own where everything a worker can reach lies at
    neutral paths (``/sandbox/...``): the interpreter, the standard library, torch's site
    folder, copies of the sandbox scripts, and the system's library folders at their usual
    places. The host's file system is detached, so the zygote, and every worker forked from
    it, has ``sys.executable``, ``sys.prefix``, ``sys.path``, every module's ``__file__``,
    every traceback and ``/proc/self/maps`` free of the host's paths (the kit's checkout, a
    venv inside it, the user's home).

    Returns only if the tree could not be made (why, as text; the caller stays in the host's
    paths). Never returns once the host's tree is detached: an error there ends the process."""
    mapping = neutral_paths(settings, _mapped_files())
    handles = {}
    try:
        # Handles are opened in the new mount namespace: a bind from one of the old one fails.
        _check(_libc.unshare(CLONE_NEWNS), "unshare mount")
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        for path in mapping:
            handles[path] = _open_path(path)
        systems = [p for p in SYSTEM_LIBRARIES if os.path.isdir(p) and not os.path.islink(p)]
        for path in (*systems, *SYSTEM_FILES, *DEVICES):
            if os.path.exists(path):
                handles[path] = _open_path(path)
        scripts = {}
        for name in SCRIPTS:
            with open(os.path.join(script_dir, name), "rb") as handle:
                scripts[name] = handle.read()
        links = {"/" + n: os.readlink("/" + n) for n in os.listdir("/") if os.path.islink("/" + n)
                 and any(_inside(os.path.realpath("/" + n), s) for s in systems)}
        hidden = [t for t in (translate(p, mapping) for p in settings.get("hide", ())) if t is not None]
        executable = mapping[os.path.realpath(sys.executable)]
        sites = [translate(p, mapping) for p in settings["site_dirs"]]
        stdlib = sorted({translate(p, mapping) for p in settings["stdlib_dirs"]})
        root = _temporary_mount_point()
        _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,nr_inodes=4096,mode=755")
        try:
            _fill_neutral_tree(root, mapping, handles, systems, links, scripts, hidden)
        except BaseException:
            _libc.umount2(root.encode(), MNT_DETACH)
            raise
    except OSError as error:
        return f"{type(error).__name__}: {error}"
    finally:
        for handle in handles.values():
            os.close(handle)
    try:  # from here on there is no way back to the host's paths
        os.chdir(root)
        _check(_libc.syscall(ctypes.c_long(SYS_PIVOT_ROOT[platform.machine()]), b".", b"."), "pivot_root")
        _check(_libc.umount2(b".", MNT_DETACH), "detach the host's tree")
        os.chdir("/")
        _mount(None, "/", None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        neutral = {**settings, "neutral": True, "site_dirs": sites, "stdlib_dirs": stdlib,
                   "keep": sorted({*stdlib, *sites}), "hide": hidden}
        settings_fd = os.memfd_create("autograder-zygote-settings", 0)
        os.write(settings_fd, __import__("json").dumps(neutral).encode())
        os.lseek(settings_fd, 0, os.SEEK_SET)
        environment = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1", "LANG": "C.UTF-8"}
        if any(os.path.basename(p).startswith("libpython") for p in mapping):
            environment["LD_LIBRARY_PATH"] = f"{NEUTRAL_PYTHON}/lib"  # before the binary's RUNPATH
        os.execve(executable, [executable, "-I", "-S", f"{NEUTRAL_SCRIPTS}/zygote.py", str(control_fd),
                               str(settings_fd)], environment)
    except BaseException as error:
        os.write(2, f"sandbox setup failed: the zygote's neutral tree: {error}\n".encode())
        os._exit(70)


def _fill_neutral_tree(root, mapping, handles, systems, links, scripts, hidden):
    read_only = MS_RDONLY | MS_NOSUID | MS_NODEV
    for host, neutral in sorted(mapping.items(), key=lambda item: len(item[1])):  # parents first
        # the handle, not the path: the tree is built where the host's path may now be covered
        # (a venv under /tmp, below the tmpfs this tree is being built in)
        if stat.S_ISDIR(os.fstat(handles[host]).st_mode):
            os.makedirs(root + neutral, mode=0o755, exist_ok=True)
        else:
            _make_file(root + neutral)
        _bind(handles[host], root + neutral, read_only)
    for path in systems:
        os.makedirs(root + path, mode=0o755, exist_ok=True)
        _bind(handles[path], root + path, read_only)
    for path in SYSTEM_FILES:
        if path in handles:
            _make_file(root + path)
            _bind(handles[path], root + path, read_only | MS_NOEXEC)
    for path, target in links.items():
        os.symlink(target, root + path)
    os.makedirs(root + NEUTRAL_SCRIPTS, mode=0o755)
    for name, text in scripts.items():
        with open(f"{root}{NEUTRAL_SCRIPTS}/{name}", "wb") as handle:
            handle.write(text)
    os.makedirs(root + "/dev", mode=0o755)
    _mount("tmpfs", root + "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,nr_inodes=64,mode=755")
    for path in DEVICES:
        if path in handles:
            _make_file(root + path)
            _bind(handles[path], root + path, MS_NOSUID | MS_NOEXEC)
    _cover(root, hidden, handles.get("/dev/null"))
    os.mkdir(root + "/proc")
    _mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.mkdir(root + "/tmp")  # where each worker builds its own root, then its /tmp


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
    join_own_session_keyring()
    if settings.get("seccomp"):  # last: nothing after it needs what it refuses
        try:
            install_seccomp(settings["seccomp"])
        except OSError as error:
            raise IsolationError(error.errno, f"seccomp: {error.strerror}") from None


# -- clean-up (called in the zygote) ------------------------------------------------------
def kill_uids(uids):
    """SIGKILL every process of these uids, wherever it is (a backstop behind the PID
    namespaces), and empty their kernel keyrings (``clear_keyrings``). ``kill(-1)`` as that uid reaches exactly the processes the uid owns; the
    kernel refuses a fork to a process with SIGKILL pending, so nothing slips through.
    The caller keeps root as its saved uid and returns to it after each uid."""
    for uid in uids:
        os.setresuid(uid, uid, 0)
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass  # nothing of that uid is left
        finally:
            try:
                clear_keyrings()
            finally:
                os.setresuid(0, 0, 0)
