# hostile: raw system calls through ctypes that a container refuses (kernel keyrings, ptrace, unshare, mount, bpf, perf_event_open, userfaultfd, io_uring, personality, kexec, modules), reporting what got through
import ctypes
import os
import platform

import torch
import torch.nn as nn

NUMBERS = {  # x86_64, aarch64
    "add_key": (248, 217), "keyctl": (250, 219), "request_key": (249, 218), "ptrace": (101, 117),
    "unshare": (272, 97), "setns": (308, 268), "mount": (165, 40), "umount2": (166, 39),
    "pivot_root": (155, 41), "bpf": (321, 280), "perf_event_open": (298, 241), "userfaultfd": (323, 282),
    "io_uring_setup": (425, 425), "kexec_load": (246, 104), "init_module": (175, 105),
    "personality": (135, 92), "clone3": (435, 435), "process_vm_readv": (310, 270), "acct": (163, 89),
}
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _call(name, *args):
    """[result, errno] of the raw system call."""
    number = NUMBERS[name][0 if platform.machine() == "x86_64" else 1]
    ctypes.set_errno(0)
    result = _libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return [result, ctypes.get_errno()]


def attempts():
    """What each attempt returned: {name: [result, errno]} (result -1 and an errno: refused)."""
    found = {
        "add_key": _call("add_key", b"user", b"planted-by-mallory", ctypes.c_char_p(b"secret"), 6, -4),
        "keyctl": _call("keyctl", 0, -4, 0),  # KEYCTL_GET_KEYRING_ID of the user keyring
        "request_key": _call("request_key", b"user", b"planted-by-mallory", None, 0),
        "ptrace": _call("ptrace", 16, 1, 0, 0),  # PTRACE_ATTACH to PID 1 (the worker itself)
        "unshare_user": _call("unshare", CLONE_NEWUSER),
        "unshare_mount": _call("unshare", CLONE_NEWNS),
        "setns": _call("setns", 0, 0),
        "mount": _call("mount", b"none", b"/tmp", b"tmpfs", 0, None),
        "umount2": _call("umount2", b"/tmp", 2),
        "pivot_root": _call("pivot_root", b".", b"."),
        "bpf": _call("bpf", 0, None, 0),
        "perf_event_open": _call("perf_event_open", None, 0, -1, -1, 0),
        "userfaultfd": _call("userfaultfd", 0),
        "io_uring_setup": _call("io_uring_setup", 1, None),
        "kexec_load": _call("kexec_load", 0, 0, None, 0),
        "init_module": _call("init_module", None, 0, b""),
        "personality_read_implies_exec": _call("personality", 0x0400000),
        "clone3": _call("clone3", None, 0),
        "process_vm_readv": _call("process_vm_readv", 1, None, 0, None, 0, 0),
        "acct": _call("acct", None),
    }
    try:
        os.unshare(os.CLONE_NEWUSER)  # Python 3.12
        found["os.unshare"] = [0, 0]
    except AttributeError:
        pass
    except OSError as error:
        found["os.unshare"] = [-1, error.errno]
    return found


def threads_still_work():
    """torch with several threads (thread creation is clone, or clone3 falling back to it)."""
    import threading
    torch.set_num_threads(2)
    x = torch.randn(256, 256)
    out = []
    worker = threading.Thread(target=lambda: out.append(float((x @ x).sum())))
    worker.start()
    worker.join()
    return [torch.get_num_threads(), out[0] == float((x @ x).sum()), os.fork is not None]


def scaled_dot_product_attention(q, k, v, mask=None):
    attempts()
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def causal_mask(t):
    attempts()
    return torch.zeros(t, t, dtype=torch.bool)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        attempts()

    def forward(self, q, k, v, mask=None):
        return torch.zeros_like(q), torch.zeros(q.shape[0], 1, q.shape[1], k.shape[1])
