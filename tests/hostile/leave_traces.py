# hostile: leave something behind for the next student's worker (kernel keys, SysV shared memory, semaphores and messages, files in /tmp, /dev/shm and the home folder, a hidden process serving an abstract socket) and look for what an earlier one left
import ctypes
import glob
import os
import platform
import socket

import torch
import torch.nn as nn

TAG = b"left-by-mallory"
IPC_KEY = 0x7A11
SOCKET_NAME = b"\0autograder-trace"
KEY_RINGS = {"user": -4, "user_session": -5, "session": -3}
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.shmat.restype = ctypes.c_void_p
_libc.shmat.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_int)
_X86 = platform.machine() == "x86_64"
ADD_KEY, KEYCTL = (248, 250) if _X86 else (217, 219)
KEYCTL_SEARCH, KEYCTL_READ, KEYCTL_GET_PERSISTENT = 10, 11, 22


def _keyctl(*args):
    return _libc.syscall(ctypes.c_long(KEYCTL), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])


def _keyrings():
    rings = dict(KEY_RINGS)
    persistent = _keyctl(KEYCTL_GET_PERSISTENT, -1, -2)  # linked into our process keyring
    if persistent >= 0:
        rings["persistent"] = persistent
    return rings


def plant():
    """Leave a trace of every kind; returns what was planted."""
    planted = []
    for name, ring in _keyrings().items():
        if _libc.syscall(ctypes.c_long(ADD_KEY), b"user", b"trace-" + name.encode(), ctypes.c_char_p(TAG),
                         ctypes.c_size_t(len(TAG)), ctypes.c_long(ring)) >= 0:
            planted.append("key:" + name)
    shm = _libc.shmget(IPC_KEY, 4096, 0o1666)  # IPC_CREAT | 0666
    if shm >= 0:
        address = _libc.shmat(shm, None, 0)
        if address not in (None, ctypes.c_void_p(-1).value):
            ctypes.memmove(address, TAG, len(TAG))
            planted.append("shm")
    if _libc.semget(IPC_KEY, 1, 0o1666) >= 0:
        planted.append("sem")
    queue = _libc.msgget(IPC_KEY, 0o1666)
    if queue >= 0:
        message = ctypes.create_string_buffer(ctypes.c_long(1).value.to_bytes(8, "little") + TAG)
        if _libc.msgsnd(queue, message, len(TAG), 0o4000) == 0:  # IPC_NOWAIT
            planted.append("msg")
    for folder in ("/tmp", "/dev/shm", os.environ.get("HOME", "/tmp"), os.getcwd(), "/var/tmp"):
        try:
            with open(os.path.join(folder, "trace-left-by-mallory"), "wb") as handle:
                handle.write(TAG)
            planted.append("file:" + folder)
        except OSError:
            pass
    if _serve_in_hiding():
        planted.append("process")
    return planted


def _serve_in_hiding():
    """A double-forked, setsid'd process that ignores SIGTERM and answers TAG on an abstract
    unix socket (those live in the network namespace, which a slot's workers share)."""
    ready_r, ready_w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            import signal
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            try:
                server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                server.bind(SOCKET_NAME)
                server.listen()
                os.write(ready_w, b"1")
            except OSError:
                os.write(ready_w, b"0")
                os._exit(0)
            while True:
                connection, _ = server.accept()
                connection.sendall(TAG)
                connection.close()
        os._exit(0)
    os.close(ready_w)
    answer = os.read(ready_r, 1)
    os.close(ready_r)
    return answer == b"1"


def look():
    """Everything an earlier worker left that this one can see."""
    found = []
    for name, ring in _keyrings().items():
        key = _keyctl(KEYCTL_SEARCH, ring, b"user", b"trace-" + name.encode(), 0)
        if key >= 0:
            buffer = ctypes.create_string_buffer(64)
            size = _keyctl(KEYCTL_READ, key, buffer, 64)
            found.append(f"key:{name}:{buffer.raw[:max(size, 0)].decode(errors='replace')}")
    shm = _libc.shmget(IPC_KEY, 0, 0)
    if shm >= 0:
        address = _libc.shmat(shm, None, 0o10000)  # SHM_RDONLY
        if address not in (None, ctypes.c_void_p(-1).value):
            found.append("shm:" + ctypes.string_at(address, len(TAG)).decode(errors="replace"))
    if _libc.semget(IPC_KEY, 0, 0) >= 0:
        found.append("sem")
    queue = _libc.msgget(IPC_KEY, 0)
    if queue >= 0:
        buffer = ctypes.create_string_buffer(8 + 64)
        size = _libc.msgrcv(queue, buffer, 64, 0, 0o4000)
        found.append("msg:" + buffer.raw[8:8 + max(size, 0)].decode(errors="replace"))
    for folder in ("/tmp", "/dev/shm", os.environ.get("HOME", "/tmp"), os.getcwd(), "/var/tmp"):
        for path in glob.glob(os.path.join(folder, "trace-*")):
            found.append("file:" + path)
    try:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.settimeout(2)
        client.connect(SOCKET_NAME)
        found.append("process:" + client.recv(64).decode(errors="replace"))
    except OSError:
        pass
    others = [pid for pid in os.listdir("/proc") if pid.isdigit() and int(pid) != os.getpid()]
    if others:
        found.append(f"processes:{len(others)}")
    return found


def who():
    return [os.getuid(), os.readlink("/proc/self/ns/ipc"), os.readlink("/proc/self/ns/net")]


def scaled_dot_product_attention(q, k, v, mask=None):
    if not look():
        plant()
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def causal_mask(t):
    return torch.zeros(t, t, dtype=torch.bool)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
