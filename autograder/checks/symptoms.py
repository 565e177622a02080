"""The diagnosis's probes that show a mistake by its symptom (``@symptom``, methods of
``SymptomProbes``, which ``Diagnoser`` of ``checks.diagnosis`` inherits), in the order they are
tried; ``Probe`` and ``ProbeKit`` live in ``checks.probes``.
"""

import ast
import re

import torch

from autograder.checks import targets
from autograder.checks.catalogue import BY_ID
from autograder.checks.probes import ProbeKit, _tensors
from autograder.checks.registry import CheckFailed
from autograder.checks.variants import MODELS, causal_like
from autograder.checks.verdicts import meta_has_no_data
from autograder.sandbox.process import StudentError, WorkerFailure
from autograder.sandbox.wire import RemoteTensor


# -- mistakes found by their symptom, in the order they are tried --------------------------------
SYMPTOMS = {}  # mistake id -> Diagnoser method name, in the order they are tried


def symptom(mistake_id):
    """Declare the decorated Diagnoser method as the probe that shows ``mistake_id``:
    ``test(self, target, base)`` returns something true when the target shows it."""
    def register(method):
        SYMPTOMS[mistake_id] = method.__name__
        return method
    return register


class SymptomProbes:
    """The symptom probes, as methods of the ``Diagnoser`` (``self``: its session, plan, probes)."""

    # -- probes for the mistakes found by their symptom --------------------------------------------
    def _setups(self, target, batch=2):
        """Calls at the chapter's sizes: [(callee, args, kwargs, reference)], one per form of
        the target (the encoder block: post-LN and pre-LN)."""
        return MODELS[target].setups(ProbeKit(self, f"{target}/inputs{batch}"), batch)

    def _reference_output(self, target, args, kwargs, ref):
        with torch.no_grad():
            if ref is None:  # a function: the declared reference
                return targets.get(target).implementation()(*args, **kwargs)[0]
            result = ref(*args, **kwargs)
        return result[0] if isinstance(result, (tuple, list)) else result

    @staticmethod
    def _guarded(function):
        try:
            return function()
        except (StudentError, CheckFailed, WorkerFailure):
            return None

    def _any_setup(self, target, test, batch=2):
        """The first true answer of ``test(callee, args, kwargs, reference)`` over the setups
        (a setup the student's code fails on answers nothing)."""
        for setup in self._guarded(lambda: self._setups(target, batch)) or []:
            answer = self._guarded(lambda: test(*setup))
            if answer:
                return answer
        return None

    @symptom("dropout_in_eval")
    def _random(self, target, base):
        """Two calls with the same input give different results (in eval mode)."""
        def test(obj, args, kwargs, ref):
            first = _tensors(self.session.call(obj, *args, **kwargs))[0]
            second = _tensors(self.session.call(obj, *args, **kwargs))[0]
            return (isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor)
                    and first.shape == second.shape
                    and not torch.allclose(first, second, rtol=0, atol=0, equal_nan=True))
        return bool(self._any_setup(target, test))

    @symptom("inputs_modified_in_place")
    def _in_place(self, target, base):
        def test(obj, args, kwargs, ref):
            _, after = self.session.call_returning_inputs(obj, *args, **kwargs)
            return any(isinstance(a, torch.Tensor) and not (
                isinstance(b, torch.Tensor) and b.shape == a.shape and torch.equal(a, b))
                for a, b in zip(args, after or []))
        return bool(self._any_setup(target, test))

    @symptom("graph_detached")
    def _detached(self, target, base):
        """Right values, no gradient to some parameter or input."""
        def test(obj, args, kwargs, ref):
            out = _tensors(self.session.call(obj, *args, **kwargs))[0]
            if not self.same(out, self._reference_output(target, args, kwargs, ref)):
                return False
            params, inputs = self.session.grad(obj, torch.ones_like(out), *args, **kwargs)
            dead = [p for p, grad in params.items() if not isinstance(grad, torch.Tensor)]
            dead += [i for i, a in enumerate(args) if a.is_floating_point() and (
                i >= len(inputs) or not isinstance(inputs[i], torch.Tensor)
                or not bool(inputs[i].abs().sum() > 0))]
            return bool(dead)
        return bool(self._any_setup(target, test))

    @symptom("fixed_device")
    def _fixed_device(self, target, base):
        """Works on the CPU, fails on the ``meta`` device: returns where it failed."""
        declared = targets.get(target)

        def test(obj, args, kwargs, ref):
            self.session.call(obj, *args, **kwargs)
            meta = [a.to("meta") for a in args]
            meta_kwargs = {k: v.to("meta") for k, v in kwargs.items()}
            try:
                remote = target if declared.kind == targets.FUNCTION else self.session.new(
                    target, *declared.arguments(self.plan.chapter), device="meta",
                    **MODELS[target].meta_kwargs(ref))
                self.session.call(remote, *meta, **meta_kwargs)
            except StudentError as error:
                if meta_has_no_data(error):
                    return None  # meta's own limit, not the code's device (expect_runs_on_meta)
                return error.type, frozenset(error.where) or frozenset([error.message])
            return None
        return self._any_setup(target, test)

    @symptom("wrong_default")
    def _wrong_default(self, target, base):
        """A module built without the constructor's keywords that the contract gives a default
        computes otherwise than the reference, and built with those defaults written out
        computes the reference's (at the chapter's sizes, on the setups' inputs)."""
        declared = targets.get(target)
        values = contract_defaults(declared.signature.text)
        setups = self._guarded(lambda: self._setups(target)) if values and declared.kind == targets.MODULE else None
        if not setups:
            return False
        kit = ProbeKit(self, f"{target}/defaults")
        _, args, kwargs, _ = setups[0]
        built = declared.arguments(self.plan.chapter)
        (own, ref, _), (spelled, spelled_ref, _) = kit.module(target, *built), kit.module(target, *built, **values)
        verdicts = [self.same(_tensors(self.session.call(obj, *args, **kwargs))[0],
                              self._reference_output(target, args, kwargs, reference))
                    for obj, reference in ((own, ref), (spelled, spelled_ref))]
        return verdicts == [False, True]

    @symptom("float32_result")
    def _float32(self, target, base):
        """The target's dtype check failed; at the chapter's sizes it is right in float32, and in
        float64 (inputs and, for a module, weights) it returns float32 holding the reference's
        values or raises torch's error for mixed float and double."""
        if not any(o.check.target == target and o.check.category == "dtype" and o.status == "failed"
                   for o in self.outcomes.values()):
            return False
        declared = targets.get(target)
        kit = ProbeKit(self, f"{target}/float64")

        def test(obj, args, kwargs, ref):
            if not any(isinstance(a, torch.Tensor) and a.is_floating_point() for a in args) or not self.same(
                    _tensors(self.session.call(obj, *args, **kwargs))[0],
                    self._reference_output(target, args, kwargs, ref)):
                return False
            args = [a.double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
            if declared.kind == targets.MODULE:
                obj, ref = kit.ctx.with_own_sublayers(target, *declared.arguments(self.plan.chapter),
                                                      dtype="float64", **MODELS[target].meta_kwargs(ref))
            try:
                got = _tensors(self.session.call(obj, *args, **kwargs))[0]
            except StudentError as error:
                return bool(_MIXED_DTYPES.search(error.message))
            want = self._reference_output(target, args, kwargs, ref)
            return (isinstance(got, torch.Tensor) and got.dtype == torch.float32
                    and want.dtype == torch.float64 and bool(self.same(got, want)))
        return bool(self._any_setup(target, test))

    @symptom("extra_axes")
    def _extra_axes(self, target, base):
        """On the probe an output has more axes than the reference's, all the extra ones of size
        1, and the reference's values once they are taken away."""
        probe = self.probe(target)
        if not probe.ok:
            return False
        extra = False
        for key, want in self.expected(target, probe, base).items():
            got = probe.outputs.get(key)
            if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor) or isinstance(got, RemoteTensor):
                continue
            if got.dim() > want.dim() and _squeezed_copy(want, got, self.tol):
                if not self.same(got.reshape(want.shape), want):
                    return False
                extra = True
            elif not self.same(got, want):
                return False  # something else is wrong too
        return extra

    @symptom("float64_result")
    def _float64(self, target, base):
        """The target's dtype check failed, and on float32 inputs (the probe's) it returns float64
        holding the reference's values (a model's probe may convert what it compares: the
        check's verdict, made on what the student returned, comes first)."""
        if not any(o.check.target == target and o.check.category == "dtype" and o.status == "failed"
                   for o in self.outcomes.values()):
            return False
        probe = self.probe(target)
        return (probe.ok and self.matches(target, probe, base) and any(
            isinstance(v, torch.Tensor) and not isinstance(v, RemoteTensor) and v.dtype == torch.float64
            for v in probe.outputs.values()))

    @symptom("squeezed_axes")
    def _squeezed(self, target, base):
        """At size 1 (batch, tokens, heads, d_k) the output lacks size-1 axes but holds the
        reference's values."""
        def test():
            calls = MODELS[target].size_one_calls(ProbeKit(self, f"{target}/ones"))
            if calls is None:
                return False
            squeezed = False
            for got, want in calls:
                for a, b in zip(got, want):
                    if not isinstance(b, torch.Tensor):
                        continue
                    if self.same(a, b):
                        continue
                    if not _squeezed_copy(a, b, self.tol):
                        return False
                    squeezed = True
            return squeezed
        return bool(self._guarded(test))

    @symptom("batch_items_mixed")
    def _mixed(self, target, base):
        """Changing batch items 1 and 2 changes the output of batch item 0."""
        g = self.generator(f"{target}/mixed")

        def test(obj, args, kwargs, ref):
            out = _tensors(self.session.call(obj, *args, **kwargs))[0]
            changed = [a.clone() for a in args]
            for a in changed:
                a[1:] = self.randn(g, *a[1:].shape)
            again = _tensors(self.session.call(obj, *changed, **kwargs))[0]
            if not (isinstance(out, torch.Tensor) and isinstance(again, torch.Tensor)
                    and out.shape == again.shape and out.shape[:1] == (3,)):
                return False
            repeat = _tensors(self.session.call(obj, *args, **kwargs))[0]
            if not (isinstance(repeat, torch.Tensor) and torch.equal(repeat, out)):
                return False  # not deterministic (dropout): another matter
            return not torch.allclose(out[0], again[0], atol=1e-5, rtol=0)
        return bool(self._any_setup(target, test, batch=3))

    @symptom("equal_lengths_assumed")
    def _equal_lengths(self, target, base):
        """Right when Tq == Tk, wrong (or failing) at the chapter's Tq != Tk."""
        if not MODELS[target].two_lengths:
            return False
        square = self.probe(target, "square")
        if not square.ok or not self.matches(target, square, base):
            return False
        chapter = self.probe(target, "chapter")
        return not (chapter.ok and self.matches(target, chapter, base))

    @symptom("sdpa.head_axis")
    def _head_axis(self, target, base):
        """Right on (B, T, d) inputs, raises once they have a head axis (B, H, T, d_k)."""
        if target != BY_ID["sdpa.head_axis"].home:
            return False
        g = self.generator(f"{target}/head_axis")
        q, k, v = self.randn(g, 2, 3, 5, 4), self.randn(g, 2, 3, 7, 4), self.randn(g, 2, 3, 7, 4)
        try:
            flat = _tensors(self.session.call(target, q[0], k[0], v[0]), 2)
        except StudentError:
            return False
        expected = targets.REFERENCES.scaled_dot_product_attention(q[0], k[0], v[0])
        if any(not isinstance(got, torch.Tensor) or got.shape != want.shape
               or not torch.allclose(got, want, rtol=self.tol.rtol, atol=self.tol.atol)
               for got, want in zip(flat, expected)):
            return False
        try:
            self.session.call(target, q, k, v)
        except StudentError:
            return True
        return False

    @symptom("hardcoded_sizes")
    def _hardcoded(self, target, base):
        """Right at the chapter's sizes, wrong (or failing) at others or on a long sequence."""
        chapter = self.probe(target, "chapter")
        if not chapter.ok or not self.matches(target, chapter, base):
            return False
        for kind in ("standard", "long"):
            other = self.probe(target, kind)
            if not (other.ok and self.matches(target, other, base)):
                return True
        return False

    @symptom("dec.mask_made_float")
    def _mask_made_float(self, target, base):
        """The block hands its self-attention a float copy of the causal mask (0/1 values)."""
        if target != BY_ID["dec.mask_made_float"].home:
            return False
        kit = ProbeKit(self, f"{target}/mask_dtype")
        c = self.plan.chapter
        obj, _, _ = kit.module(target, *kit.arguments(target))
        x, memory = kit.randn(2, c.decoder_length, c.d_model), kit.randn(2, c.length, c.d_model)
        standins = {"self_attn": [kit.ctx.standin_attention(2, c.num_heads, c.decoder_length,
                                                            c.decoder_length, c.d_model)]}
        _, records = kit.ctx.record(obj, x, memory, modules=("self_attn",), functions=("causal_mask",),
                                    standins=standins)
        calls, made = records.of("self_attn"), records.of("causal_mask")
        if len(calls) != 1 or not made or not all(
                isinstance(m.main, torch.Tensor) and m.main.dtype == torch.bool for m in made):
            return False  # a causal_mask that is float itself is causal_mask's own matter
        mask = calls[0].attention_arguments()[3]
        return (isinstance(mask, torch.Tensor) and mask.is_floating_point()
                and mask.shape[-2:] == (c.decoder_length, c.decoder_length)
                and torch.equal(mask.reshape(-1, *mask.shape[-2:])[0].bool(),
                                causal_like(c.decoder_length))
                and bool(((mask == 0) | (mask == 1)).all()))

    def _right_alone(self, target):
        """With a batch of one (nothing to mix) every form's output equals the reference."""
        def test():
            setups = self._setups(target, batch=1)
            return bool(setups) and all(
                self.same(_tensors(self.session.call(obj, *args, **kwargs))[0],
                          self._reference_output(target, args, kwargs, ref))
                for obj, args, kwargs, ref in setups)
        return bool(self._memo("right_alone", target, test))

    def _raises_in_sdpa(self, target):
        """MultiHeadAttention, at the chapter's sizes, raises inside scaled_dot_product_attention."""
        if target != targets.MHA:
            return False
        c, g = self.plan.chapter, self.generator(f"{target}/raises_in_sdpa")
        q, kv = self.randn(g, 2, 5, c.d_model), self.randn(g, 2, 7, c.d_model)
        try:
            self.session.call(self.session.new(target, c.d_model, c.num_heads), q, kv, kv)
        except StudentError as error:
            return any(targets.SDPA in where for where in error.where)
        return False



# torch's errors for float and double mixed in one operation
_MIXED_DTYPES = re.compile(r"scalar type (Float|Double) but found (Float|Double)|same dtype|"
                           r"(float|double) != (float|double)|(Float|Double) and (Float|Double)")


def contract_defaults(text):
    """{keyword: value} of the constructor's defaults in a contract's spelling of a signature
    ("EncoderBlock(d_model, num_heads, d_ff, prenorm=False); forward(x, mask=None)" ->
    {"prenorm": False}); defaults that are not literals, and None, are left out."""
    found = {}
    for name, value in re.findall(r"(\w+)=([^,();]+)", text.split(";")[0]):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            continue
        if value is not None:
            found[name] = value
    return found


def _squeezed_copy(got, want, tol):
    """``got`` is ``want`` with some size-1 axes dropped."""
    if not isinstance(got, torch.Tensor) or isinstance(got, RemoteTensor) or got.shape == want.shape:
        return False
    if got.numel() != want.numel() or [n for n in got.shape if n != 1] != [n for n in want.shape if n != 1]:
        return False
    return bool(torch.allclose(got.reshape(want.shape).double(), want.double(), rtol=tol.rtol, atol=tol.atol))
