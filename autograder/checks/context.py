"""What a check works with: the student's session, the reference and small verdict helpers.

Everything here runs in the trusted process. Inputs are made here, sent to the
worker as plain data, and what comes back is compared here.
"""

import zlib

import torch

import solutions
from autograder.checks.registry import fail, label
from autograder.reference_weights import deterministic_weights
from autograder.sandbox.process import StudentError
from autograder.sandbox.wire import Opaque, RemoteTensor
from autograder.texts import bilingual


# What ``with_reference_sublayers`` swaps for the reference inside the student's block;
# ``with_own_sublayers`` (the integration checks) keeps the student's versions of all three.
SUBLAYERS = ("MultiHeadAttention", "FeedForward", "causal_mask")


class Context:
    StudentError = StudentError

    def __init__(self, session, plan, check, stubs=frozenset()):
        """``plan``: the assignment's grading plan, anything with ``tolerances`` (name ->
        Tolerance), ``chapter`` and ``hidden`` (Sizes); a ``config.Course`` has all three."""
        self.session = session
        self.stubs = stubs  # names still holding the assignment's NotImplementedError stub
        self.plan = plan
        self.check = check
        self.chapter = plan.chapter
        self.hidden = plan.hidden
        self.reference = solutions
        self._generator = torch.Generator().manual_seed(zlib.crc32(check.id.encode()))

    # -- inputs ------------------------------------------------------------------
    def randn(self, *shape, dtype=torch.float32, scale=1.0):
        return (torch.randn(*shape, generator=self._generator, dtype=torch.float64) * scale).to(dtype)

    def randint(self, high, size=()):
        return torch.randint(high, size, generator=self._generator)

    def tolerance(self, name):
        return self.plan.tolerances[name]

    # -- the reference, in the trusted process -------------------------------------
    def reference_instance(self, name, *args, randomize_layernorm=True, **kwargs):
        """A reference module with deterministic weights; LayerNorms get non-default ones
        so that a LayerNorm shared between sub-layers cannot hide."""
        module = getattr(self.reference, name)(*args, **kwargs).eval()
        seed = zlib.crc32(f"{self.check.id}/{name}/{args}/{sorted(kwargs.items())}".encode())
        return deterministic_weights(module, seed, randomize_layernorm)

    # -- the student's objects, in the worker ------------------------------------
    def new(self, name, *args, **kwargs):
        return self.session.new(name, *args, **kwargs)

    def call(self, target, *args, **kwargs):
        return self.session.call(target, *args, **kwargs)

    def copy_weights(self, obj, reference_module):
        """Copy the reference's parameters in by attribute path (e.g. ``attn.wq.weight``)."""
        skip = tuple(path + "." for path in obj.proxies)
        values = {path: p.detach().clone() for path, p in reference_module.named_parameters()
                  if not path.startswith(skip)}
        missing, mismatched = self.session.set_params(obj, values)
        if missing:
            fail(bilingual(
                f"Parameter berikut tidak ada pada {obj.name}: {', '.join(missing[:6])}. Gunakan "
                "nama atribut persis seperti di spesifikasi tugas (dan bias=True pada nn.Linear).",
                f"{obj.name} lacks the parameter(s): {', '.join(missing[:6])}. Use exactly the "
                "attribute names given in the assignment (and bias=True in nn.Linear)."))
        if mismatched:
            details = ", ".join(f"{p} {tuple(s)}" for p, s in mismatched[:6])
            fail(bilingual(f"Bentuk parameter tidak sesuai: {details}.",
                           f"Parameters with an unexpected shape: {details}."))
        self.session.bind_proxies(obj, reference_module)

    def with_reference_sublayers(self, name, *args, dtype=None, randomize_layernorm=True, **kwargs):
        """(student's block, reference block) holding the same weights, with the reference
        sub-layers (MultiHeadAttention, FeedForward, causal_mask) swapped into the student's
        block: a bug in a sub-layer is graded by that sub-layer's own checks, not again here."""
        return self._block(name, args, kwargs, dtype, randomize_layernorm, SUBLAYERS)

    def with_own_sublayers(self, name, *args, dtype=None, **kwargs):
        """(student's module, reference module) holding the same weights, the student's module
        exactly as written: its own sub-layers, if it has any (the integration checks)."""
        return self._block(name, args, kwargs, dtype, True, None)

    def _block(self, name, args, kwargs, dtype, randomize_layernorm, proxies):
        ref = self.reference_instance(name, *args, randomize_layernorm=randomize_layernorm, **kwargs)
        if dtype == "float64":
            ref = ref.double()
        obj = self.new(name, *args, proxies=proxies, dtype=dtype, **kwargs)
        self.copy_weights(obj, ref)
        return obj, ref

    # -- verdict helpers ---------------------------------------------------------
    def tensor(self, value, what, shape=None, dtype=None):
        """``value`` must be a real tensor (with this shape / dtype); ``what`` names it."""
        w_id, w_en = label(what)
        if isinstance(value, RemoteTensor):
            fail(bilingual(f"{w_id} berada di device {value.device}, bukan CPU.",
                           f"{w_en} is on device {value.device}, not the CPU."))
        if not isinstance(value, torch.Tensor):
            kind = value.type_name if isinstance(value, Opaque) else type(value).__name__
            fail(bilingual(f"{w_id} harus berupa torch.Tensor, tetapi bertipe {kind}.",
                           f"{w_en} must be a torch.Tensor, but it is a {kind}."))
        if shape is not None and tuple(value.shape) != tuple(shape):
            fail(bilingual(f"{w_id} berbentuk {tuple(value.shape)}, seharusnya {tuple(shape)}.",
                           f"{w_en} has shape {tuple(value.shape)}, expected {tuple(shape)}."))
        if dtype is not None and value.dtype != dtype:
            fail(bilingual(f"{w_id} bertipe {value.dtype}, seharusnya {dtype}.",
                           f"{w_en} has dtype {value.dtype}, expected {dtype}."))
        return value

    def pair(self, result, what):
        """A forward that must return a pair (output, weights)."""
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            fail(bilingual(f"{what} harus mengembalikan pasangan (keluaran, bobot attention).",
                           f"{what} must return a pair (output, attention weights)."))
        return result

    def close(self, actual, expected, tolerance="float32"):
        """True when ``actual`` agrees with ``expected`` within the course tolerance."""
        tol = self.tolerance(tolerance)
        return (isinstance(actual, torch.Tensor) and actual.shape == expected.shape
                and bool(torch.isfinite(actual).all())
                and torch.allclose(actual.to(expected.dtype), expected, rtol=tol.rtol, atol=tol.atol))

    def expect_close(self, actual, expected, what, tolerance="float32"):
        self.tensor(actual, what, shape=expected.shape)
        if not self.close(actual, expected, tolerance):
            diff = (actual.double() - expected.double()).abs()
            worst = "NaN" if torch.isnan(diff).any() else f"{diff.max().item():.3g}"
            w_id, w_en = label(what)
            fail(bilingual(f"{w_id} tidak sama dengan solusi acuan (selisih maksimum {worst}).",
                           f"{w_en}: mismatch with the reference (largest difference {worst})."))

    def expect_nontrivial(self, output, *inputs):
        """Property checks award points only for an output that really computes something."""
        reason = trivial_reason(output, inputs)
        if reason:
            fail(bilingual(f"Keluaran tampak trivial ({reason['id']}), jadi sifat ini tidak dapat "
                           "dinilai. Lengkapi implementasinya terlebih dahulu.",
                           f"The output looks trivial ({reason['en']}), so this property cannot be "
                           "credited. Complete the implementation first."))


def trivial_reason(output, inputs=()):
    if not bool(torch.isfinite(output).all()):
        return bilingual("berisi NaN atau inf — sering karena semua kunci pada satu baris diblokir",
                         "it contains NaN or inf — often because every key of a row is blocked")
    if output.numel() > 1 and float(output.double().std()) < 1e-7:
        return bilingual("semua nilainya sama", "all its values are equal")
    for tensor in inputs:
        if isinstance(tensor, torch.Tensor) and tensor.shape == output.shape and torch.allclose(
                output.double(), tensor.double(), atol=1e-6):
            return bilingual("sama dengan masukannya", "it equals its input")
    return None
