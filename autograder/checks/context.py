"""What a check works with: the student's session, the reference and small verdict helpers.

Everything here runs in the trusted process. Inputs are made here, sent to the
worker as plain data, and what comes back is compared here.

Sub-layers are never swapped: a block always runs with its own ``MultiHeadAttention``,
``FeedForward``, ``causal_mask`` and ``scaled_dot_product_attention``. To grade a block's
wiring without grading its sub-layers again, a check *records* them (``ctx.record``): the
worker returns, with the block's output, every call of the named sub-layers and functions
(arguments as passed, result), and the check recomputes the wiring here from the recorded
results (``Records``, ``Call.arguments``, ``blocked``, ``layer_norm``).
"""

import threading
import zlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F

import solutions
from autograder.checks.common import expect_float64_precision
from autograder.checks.registry import CheckFailed, fail, label
from autograder.reference_weights import deterministic_weights
from autograder.sandbox.process import StudentError
from autograder.sandbox.session import EncodedValues
from autograder.sandbox.wire import Opaque, RemoteTensor
from autograder.texts import bilingual


_SHARED_REFERENCES = {}  # see Context._shared_reference
_SHARED_LOCK = threading.Lock()


class Context:
    StudentError = StudentError

    def __init__(self, session, plan, check, stubs=frozenset(), defer_building=False):
        """``plan``: the assignment's grading plan, anything with ``tolerances`` (name ->
        Tolerance), ``chapter`` and ``hidden`` (Sizes); a ``config.Course`` has all three.
        ``defer_building``: the modules ``with_own_sublayers`` and ``block`` build travel with
        the next request (fewer round trips); whoever runs the check then calls
        ``session.flush()`` after it (a module that cannot be built fails that check) and
        ``session.discard_deferred()`` when it ends early."""
        self.session = session
        self.defer_building = defer_building
        self.stubs = stubs  # names still holding the assignment's NotImplementedError stub
        self.plan = plan
        self.check = check
        self.chapter = plan.chapter
        self.hidden = plan.hidden
        self.reference = solutions
        self._generator = torch.Generator().manual_seed(zlib.crc32(check.id.encode()))

    # -- inputs ------------------------------------------------------------------
    def randn(self, *shape, dtype=torch.float32, scale=1.0):
        values = torch.randn(*shape, generator=self._generator, dtype=torch.float64)
        if scale != 1.0:  # the same numbers either way; a check draws ~200 of these per submission
            values = values * scale
        return values if dtype == torch.float64 else values.to(dtype)

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

    def shared_reference(self, name, *args, dtype=None, **kwargs):
        """The reference module ``with_own_sublayers`` pairs with the student's at these
        arguments (``dtype="float64"``: the same weights in float64), without a student object.
        Shared like it: read it, do not change it."""
        return self._shared_reference(name, args, kwargs, dtype)

    def _shared_reference(self, name, args, kwargs, dtype):
        """``reference_instance`` (``.double()`` for float64), built once per check and
        configuration and shared by every submission graded in this process: a check reads it
        (forward, parameters), never changes it."""
        return self._shared_entry(name, args, kwargs, dtype)[0]

    def _shared_entry(self, name, args, kwargs, dtype):
        """(shared reference module, its parameters encoded for the wire)."""
        key = (self.check.id, name, repr(args), repr(sorted(kwargs.items())), dtype)
        with _SHARED_LOCK:
            entry = _SHARED_REFERENCES.get(key)
        if entry is None:
            module = self.reference_instance(name, *args, **kwargs)
            if dtype == "float64":
                module = module.double()
            entry = (module, EncodedValues.of(dict(module.named_parameters())))
            with _SHARED_LOCK:
                if len(_SHARED_REFERENCES) >= 4096:
                    _SHARED_REFERENCES.clear()
                entry = _SHARED_REFERENCES.setdefault(key, entry)
        return entry

    # -- the student's objects, in the worker ------------------------------------
    def new(self, name, *args, **kwargs):
        return self.session.new(name, *args, **kwargs)

    def call(self, target, *args, **kwargs):
        return self.session.call(target, *args, **kwargs)

    @staticmethod
    def _expect_weights_fit(obj, missing, mismatched, lenient=()):
        prefixes = tuple(path + "." for path in lenient)
        missing = [p for p in missing if not p.startswith(prefixes)]
        mismatched = [(p, s) for p, s in mismatched if not p.startswith(prefixes)]
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

    def with_own_sublayers(self, name, *args, dtype=None, **kwargs):
        """(student's module, reference module) holding the same weights, the student's module
        exactly as written: its own sub-layers, if it has any. The reference module is shared
        (see ``_shared_reference``): read it, do not change it."""
        return self._with_weights(name, args, kwargs, dtype, ())

    def block(self, name, *args, sublayers=(), dtype=None, **kwargs):
        """Like ``with_own_sublayers``, for checks that record the block's ``sublayers``
        (attribute paths) and grade the wiring from their results: a sub-layer whose parameters
        differ from the contract's (another layout, hard-coded sizes) keeps its own, as its own
        checks grade them; the block's own parameters (its LayerNorms) must fit."""
        return self._with_weights(name, args, kwargs, dtype, sublayers)

    def _with_weights(self, name, args, kwargs, dtype, lenient):
        ref, values = self._shared_entry(name, args, kwargs, dtype)
        if self.defer_building:
            obj = self.session.new_with_params(
                name, args, kwargs, values, dtype,
                on_answer=lambda built, missing, mismatched: self._expect_weights_fit(
                    built, missing, mismatched, lenient))
            return obj, ref
        obj, missing, mismatched = self.session.new_with_params(name, args, kwargs, values, dtype)
        self._expect_weights_fit(obj, missing, mismatched, lenient)
        return obj, ref

    # -- recording a block's own sub-layers ------------------------------------------
    def record(self, target, *args, modules=(), functions=(), standins=None, return_inputs=False,
               **kwargs):
        """Run ``target(*args, **kwargs)`` in the worker with the sub-modules at the attribute
        paths ``modules`` and the module-level ``functions`` recorded; returns (result,
        ``Records``). ``standins`` ({path: [stand-in per call]}, see ``standin_attention``) are
        check-made results a sub-layer hands back instead of its own only where the block called
        it with the contract's shapes and it raised or returned another form (a tensor of
        another shape, not a pair): the block can still be graded when a sub-layer is broken,
        and the record says it happened. With
        ``return_inputs``, ``Records.inputs_after`` holds the arguments as they were afterwards."""
        result, raw, after = self.session.call_recording(
            target, args, kwargs, {"modules": modules, "functions": functions, "standins": standins},
            return_inputs=return_inputs)
        return result, Records(raw, after)

    def record_many(self, runs, timeout=None):
        """Several ``record`` runs in one request: ``runs`` is a list of dicts with ``target``,
        ``args`` and optionally ``kwargs``, ``modules``, ``functions``, ``standins`` and
        ``return_inputs``; returns [(result, ``Records``)] in the same order."""
        calls = [{"target": r["target"], "args": r["args"], "kwargs": r.get("kwargs"),
                  "return_inputs": r.get("return_inputs", False),
                  "record": {"modules": r.get("modules", ()), "functions": r.get("functions", ()),
                             "standins": r.get("standins")}} for r in runs]
        return [(result, Records(raw, after))
                for result, raw, after in self.session.calls_recording(calls, timeout=timeout)]

    def grad_recording(self, target, cotangent, args, modules=()):
        """``session.grad`` with the sub-modules at ``modules`` recorded: (param grads, input
        grads, ``Records``); each ``Call.grad`` says whether autograd was on during the call and
        whether its inputs and its result required gradients."""
        params, inputs, raw = self.session.grad_recording(target, cotangent, args,
                                                          record={"modules": modules})
        return params, inputs, Records(raw)

    def standin_attention(self, batch, heads, tq, tk, d_model, dtype=torch.float32):
        """A stand-in for a MultiHeadAttention call on (B, Tq, D), (B, Tk, D), (B, Tk, D): a
        check-made (out, weights) of the contract's shapes, weights distributions over the keys."""
        weights = self.randn(batch, heads, tq, tk, dtype=dtype).softmax(-1)
        return {"result": (self.randn(batch, tq, d_model, dtype=dtype), weights),
                "inputs": [(batch, tq, d_model), (batch, tk, d_model), (batch, tk, d_model)]}

    def standin_tokenwise(self, shape, dtype=torch.float32):
        """A stand-in for a call that maps a (B, T, D) tensor to one of the same shape (FeedForward)."""
        return {"result": self.randn(*shape, dtype=dtype), "inputs": [tuple(shape)]}

    def same(self, actual, expected, tolerance="float32"):
        """Like ``close``, but NaN where ``expected`` has NaN is equal (what a recorded
        sub-layer produced flows through the wiring as it is)."""
        tol = self.tolerance(tolerance)
        return (isinstance(actual, torch.Tensor) and isinstance(expected, torch.Tensor)
                and actual.shape == expected.shape and actual.dtype != torch.bool
                and torch.allclose(actual.to(expected.dtype), expected, rtol=tol.rtol, atol=tol.atol,
                                   equal_nan=True))

    # -- verdict helpers ---------------------------------------------------------
    def expect_float64_block(self, out32, holds32, grade64, run64, what):
        """A block after .double(), graded from its float32 run (``out32``; ``holds32``: its
        wiring held). Where the float32 wiring holds, ``grade64()`` (the wiring graded at
        float64 tolerance; returns the float64 output) must pass and the output be float64;
        where it does not (the wiring checks say so), float64 must compute what float32 does,
        in float64 (``run64()`` is the float64 output)."""
        if not holds32:
            out64 = self.tensor(run64(), what, dtype=torch.float64)
            self.tensor(out32, what, shape=out64.shape)
            expect_float64_precision(self, out64, out32)
            return
        try:
            out64 = grade64()
        except CheckFailed as failed:
            fail(bilingual(f"Dalam float64 (setelah .double()): {failed.message['id']}",
                           f"In float64 (after .double()): {failed.message['en']}"))
        self.tensor(out64, what, dtype=torch.float64)

    def tensor(self, value, what, shape=None, dtype=None):
        """``value`` must be a real tensor (with this shape / dtype); ``what`` names it."""
        w_id, w_en = label(what)
        if isinstance(value, RemoteTensor):
            fail(bilingual(f"{w_id} berada di perangkat (device) {value.device}, bukan CPU.",
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


# -- records of a block's own sub-layers -----------------------------------------------------------
class Missing:
    """An argument the call did not pass (and whose default is not plain data)."""

    def __repr__(self):
        return "<missing>"


MISSING = Missing()

# Parameter names a student may give a sub-layer's arguments, mapped to the contract's.
ALIASES = {"query": "q", "key": "k", "value": "v", "attn_mask": "mask", "input": "x", "inputs": "x"}
_POSITIONAL = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")


@dataclass(frozen=True)
class Call:
    """One recorded call of a student's sub-layer or function."""

    names: tuple  # the attribute paths (or function name) it was recorded under
    index: int  # its number among the calls of names[0] in that request
    params: tuple | None  # the callee's signature: (name, kind, has_default) per parameter
    defaults: dict  # plain-data defaults of the parameters
    args: list  # as passed (a snapshot taken at the call)
    kwargs: dict
    output: object  # the result (a snapshot), or the stand-in if ``replaced``
    grad: dict  # enabled, inputs, output: autograd state at the call (grad requests)
    replaced: dict | None  # {"raised": text} or {"returned": shapes} when a stand-in was used

    def arguments(self, slots):
        """The call's arguments mapped onto the contract's parameter names ``slots`` (e.g.
        ("q", "k", "v", "mask")): a parameter of the callee named like a slot (or an alias:
        query, key, value, attn_mask, input) fills it; the other slots are filled in order by
        the remaining positional parameters. The callee's own parameter names decide, so
        ``attn(query=x, key=x, value=x)`` and ``attn(x, x, x, m)`` read the same. A slot the
        call left to its default holds that default (None), or ``MISSING``."""
        args, kwargs = list(self.args), dict(self.kwargs)
        if self.params is None:  # no signature: positions, then keywords by name
            values = {slot: args[i] for i, slot in enumerate(slots) if i < len(args)}
            for name, value in kwargs.items():
                slot = name if name in slots else ALIASES.get(name)
                if slot in slots:
                    values.setdefault(slot, value)
            return values
        positional = [n for n, kind, _ in self.params if kind in _POSITIONAL]
        bound = dict(zip(positional, args))
        extra = [f"*{i}" for i in range(len(args) - len(positional))]
        bound.update(zip(extra, args[len(positional):]))
        bound.update(kwargs)
        for name, kind, has_default in self.params:
            if name not in bound and has_default:
                bound[name] = self.defaults.get(name, MISSING)
        values, used = {}, set()
        for slot in slots:
            for name in (slot, *[a for a, s in ALIASES.items() if s == slot]):
                if name in bound and name not in used:
                    values[slot], used = bound[name], used | {name}
                    break
        remaining = [n for n in positional + extra if n not in used]
        for slot in slots:
            if slot not in values and remaining:
                values[slot] = bound.get(remaining.pop(0), MISSING)
        return values

    def attention_arguments(self):
        """(q, k, v, mask) of a MultiHeadAttention or scaled_dot_product_attention call; k
        left out (None or not passed) means q, v left out means k, as in a forward that
        defaults them (``def forward(self, q, k=None, v=None, mask=None)``)."""
        values = self.arguments(("q", "k", "v", "mask"))
        q, k, v, mask = (values.get(s, MISSING) for s in ("q", "k", "v", "mask"))
        k = q if k is None or k is MISSING else k
        v = k if v is None or v is MISSING else v
        return q, k, v, (None if mask is MISSING else mask)

    @property
    def main(self):
        """The result, or its first item when it is a sequence (an attention's output)."""
        if isinstance(self.output, (tuple, list)):
            return self.output[0] if self.output else None
        return self.output

    @property
    def second(self):
        """The second item of a pair (an attention's weights), or None."""
        if isinstance(self.output, (tuple, list)) and len(self.output) >= 2:
            return self.output[1]
        return None


class Records:
    """The calls a recording request saw, in the order they started."""

    def __init__(self, raw, inputs_after=None):
        self.calls = [Call(**entry) for entry in raw]
        self.inputs_after = inputs_after

    def of(self, name):
        return [c for c in self.calls if name in c.names]


def blocked(mask, shape):
    """Which positions a mask argument blocks, broadcast to ``shape`` (e.g. the scores'
    (B, H, Tq, Tk)); None when it is not a mask the course's attention accepts. Boolean:
    True blocks; float (additive): -inf or <= -1e4 blocks and every other entry is 0; integer:
    non-zero blocks; None (or not passed) blocks nothing."""
    if mask is None or mask is MISSING:
        return torch.zeros(shape, dtype=torch.bool)
    if not isinstance(mask, torch.Tensor) or mask.dim() > len(shape):
        return None
    if mask.dtype == torch.bool:
        blocks = mask
    elif mask.is_floating_point():
        if bool(torch.isnan(mask).any()):
            return None
        blocks = mask <= -1e4
        if bool((mask[~blocks] != 0).any()):
            return None
    else:
        blocks = mask != 0
    try:
        return torch.broadcast_to(blocks, shape)
    except RuntimeError:
        return None


def layer_norm(x, reference_ln):
    """The reference LayerNorm's math with the weights the check copied in, here."""
    with torch.no_grad():
        return F.layer_norm(x, reference_ln.normalized_shape, reference_ln.weight.to(x.dtype),
                            reference_ln.bias.to(x.dtype), reference_ln.eps)


def _same_call(a, b):
    """Two calls with the same arguments (e.g. attn called again only to keep its weights)."""
    def flat(call):
        return [*call.args, *sorted(call.kwargs.items(), key=lambda item: item[0])]

    def same(x, y):
        if isinstance(x, tuple) and isinstance(y, tuple):
            return x[0] == y[0] and same(x[1], y[1])
        if isinstance(x, torch.Tensor) or isinstance(y, torch.Tensor):
            return (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor) and x.shape == y.shape
                    and x.dtype == y.dtype and torch.equal(x, y))
        return type(x) is type(y) and (x is y or x is None or isinstance(x, (bool, int, float, str)) and x == y)

    fa, fb = flat(a), flat(b)
    return len(fa) == len(fb) and all(same(x, y) for x, y in zip(fa, fb))


def only_call(records, path):
    """The one call of the sub-layer at ``path`` that a block's forward makes (calling it
    again with the very same arguments changes nothing)."""
    calls = records.of(path)
    if len(calls) > 1 and all(_same_call(calls[0], c) for c in calls[1:]):
        calls = calls[:1]
    if not calls:
        fail(bilingual(f"`self.{path}` tidak pernah dipanggil di forward (atau dipanggil dengan cara "
                       "yang tidak terekam, mis. lewat salinan modulnya).",
                       f"`self.{path}` is never called in forward (or in a way that is not seen, e.g. "
                       "through a copy of the module)."))
    if len(calls) > 1:
        shared = [n for n in calls[0].names if n != path]
        also = (bilingual(f" Modul yang sama juga dipakai sebagai `{shared[0]}`.",
                          f" The same module is also used as `{shared[0]}`.") if shared
                else bilingual("", ""))
        fail(bilingual(f"`self.{path}` dipanggil {len(calls)} kali dalam satu forward; seharusnya sekali."
                       + also["id"],
                       f"`self.{path}` is called {len(calls)} times in one forward; it should be called "
                       "once." + also["en"]))
    return calls[0]


def tokenwise_result(ctx, records, path, wanted, tolerance="float32"):
    """What the token-wise sub-layer at ``path`` (the FeedForward) returned for the tokens of
    ``wanted`` (B, T, D), its expected input; None when it was not given exactly those tokens.
    The usual form is one call on ``wanted``; a position-wise layer may also be called on the
    tokens flattened to (B*T, D), once per position, or on any split of them: each token of
    ``wanted`` must then reach it exactly once, and its result is put back in that token's place.
    A sub-layer that is never called, or called more than once on anything but a split of the
    tokens, fails here as in ``only_call``."""
    calls = records.of(path)
    if len(calls) <= 1 or all(_same_call(calls[0], c) for c in calls[1:]):
        call = only_call(records, path)
        given = call.arguments(("x",)).get("x", MISSING)
        if ctx.same(given, wanted, tolerance):
            return call.main
        calls = [call]
    if any(c.replaced for c in calls):
        return None
    d = wanted.shape[-1]
    wanted_rows, tol = wanted.reshape(-1, d), ctx.tolerance(tolerance)
    placed = torch.full((wanted_rows.shape[0],), -1, dtype=torch.long)
    inputs, outputs = [], []
    for call in calls:
        given, result = call.arguments(("x",)).get("x", MISSING), call.main
        if not (isinstance(given, torch.Tensor) and isinstance(result, torch.Tensor)
                and given.dim() >= 1 and given.shape[-1] == d and result.shape == given.shape
                and given.dtype != torch.bool):
            return None
        inputs.append(given.reshape(-1, d).to(wanted.dtype))
        outputs.append(result.reshape(-1, d))
    rows, results = torch.cat(inputs), torch.cat(outputs)
    if rows.shape[0] == wanted_rows.shape[0]:
        matches = torch.isclose(rows[:, None, :], wanted_rows[None, :, :], rtol=tol.rtol,
                                atol=tol.atol, equal_nan=True).all(-1)
        for row in range(rows.shape[0]):
            free = (matches[row] & (placed < 0)).nonzero()
            if not len(free):
                break
            placed[free[0, 0]] = row
        else:
            return results[placed].reshape(wanted.shape)
    if len(calls) > 1:
        only_call(records, path)  # not a split of the tokens: called more than once, as it says
    return None


def expect_heads(call, heads, path):
    """The attention sub-layer was built with the block's ``num_heads``: its weights (its own,
    also when a stand-in replaced them) have that many heads."""
    weights = call.second
    found = None
    returned = call.replaced.get("returned") if call.replaced else None
    if isinstance(returned, list) and len(returned) >= 2:
        shape = returned[1]
        found = shape[1] if isinstance(shape, tuple) and len(shape) == 4 else None
    elif not call.replaced and isinstance(weights, torch.Tensor) and weights.dim() == 4:
        found = weights.shape[1]
    if found is not None and found != heads:
        fail(bilingual(f"`self.{path}` memakai {found} head, padahal num_heads = {heads}: buat sub-layer "
                       "dengan argumen blok, bukan angka tetap.",
                       f"`self.{path}` uses {found} heads although num_heads = {heads}: build the "
                       "sub-layer with the block's arguments, not a fixed number."))
