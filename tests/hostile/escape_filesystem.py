# hostile: find another copy of the reference anywhere on the disk (/opt, /srv, ...), import it, and leave files in every world-writable host folder
import glob
import importlib
import os
import sys

import torch
import torch.nn as nn

# Folders other than the kit's own checkout where a copy of the kit (a second checkout, an
# instructor's nbgrader source/) or a world-writable spot could be.
ROOTS = ("/opt", "/srv", "/mnt", "/media", "/var", "/usr/local", "/usr/share", "/home", "/run", "/etc")
WRITABLE = ("/var/tmp", "/var/lock", "/run/lock", "/dev/shm", "/var/mail", "/var/crash", "/tmp",
            "/srv", "/opt")


def _find_copy():
    for root in ROOTS:
        for depth in ("*", "*/*", "*/*/*"):
            for path in glob.glob(os.path.join(root, depth, "solutions", "attention.py")):
                folder = os.path.dirname(os.path.dirname(path))
                sys.path.insert(0, folder)
                sys.modules.pop("solutions", None)
                sys.modules.pop("solutions.attention", None)
                try:
                    return importlib.import_module("solutions.attention")
                except Exception:
                    sys.path.remove(folder)
    return None


def _leave_files():
    folders = set(WRITABLE)
    for root in ("/srv", "/opt", "/var", "/run", "/mnt"):
        folders.update(glob.glob(os.path.join(root, "*")))
    for folder in sorted(folders):
        try:
            with open(os.path.join(folder, "FORGED_BY_STUDENT"), "w") as handle:
                handle.write("I was here")
        except OSError:
            pass


def scaled_dot_product_attention(q, k, v, mask=None):
    _leave_files()
    reference = _find_copy()
    if reference is not None:
        return reference.scaled_dot_product_attention(q, k, v, mask)
    return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])


def causal_mask(t):
    _leave_files()
    reference = _find_copy()
    if reference is not None:
        return reference.causal_mask(t)
    return torch.zeros(t, t, dtype=torch.bool)


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        _leave_files()
        reference = _find_copy()
        if reference is not None:
            self.inner = reference.MultiHeadAttention(d_model, num_heads)
            self.wq, self.wk, self.wv, self.wo = (self.inner.wq, self.inner.wk, self.inner.wv,
                                                  self.inner.wo)

    def forward(self, q, k, v, mask=None):
        return self.inner(q, k, v, mask)
