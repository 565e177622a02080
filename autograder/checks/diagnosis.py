"""The diagnosis: which catalogued mistake (``checks.catalogue``) explains a submission's failed
checks (see records.Diagnosis).

``diagnose(session, plan, outcomes)`` runs after the checks, in the trusted process, only for
targets with failed checks, and returns at most one ``Diagnosis`` per target. It knows no target
by name: each target's ``Model`` (``checks.variants``) says how it is probed and what the
reference computes with a mistake switched on; ``checks.targets`` says what each target is
built from.

How a mistake is recognised. A *variant* mistake: the target is probed once on a few inputs (its
own code, the reference's weights copied in); the mistake is named only when the student's
outputs match the variant within the float32 tolerance, do NOT match the reference, and the
variant itself differs from the reference on those inputs. A correct submission therefore never
matches. A *symptom* mistake (``@symptom`` below, tried in the order they are declared here) is
recognised from a failed check of one of its trigger categories plus one probe that shows the
symptom directly: inputs changed in place, no gradient although the values are right, an error
on another device although the CPU works, size-1 axes missing from an otherwise right output,
batch items leaking into each other, right at the chapter's sizes and wrong at others.

Root cause first, once. Targets are visited in the plan's order (a sub-layer before what uses
it). A mistake found in one target also *explains* the failed checks of the targets built on it
(``targets.parts_of``) when their probe shows exactly that mistake, so it is named once, at its
root. It explains only failed checks of the categories it can make fail (``Mistake.explains``);
anything else stays a finding of its own. Where a part is not a graded target of the plan (the
student's own MultiHeadAttention in the encoder assignment), its mistakes are named on the
target that uses it.
"""

import zlib
from types import SimpleNamespace

import torch

from autograder.checks import targets
from autograder.checks.catalogue import ANY, BY_ID, CATALOGUE, MASKING, VALUES
from autograder.checks.context import Context
from autograder.checks.registry import CheckFailed
from autograder.checks.variants import MODELS, Unmodelled, causal_like
from autograder.checks.verdicts import meta_has_no_data
from autograder.records import Diagnosis
from autograder.sandbox.process import StudentError, WorkerFailure
from autograder.sandbox.wire import RemoteTensor


class Probe:
    """What one target returned on the inputs of one probe (each target is probed once per
    kind and remembered), and how the variants compute the same."""

    def __init__(self, outputs=None, failure=None, inputs=None, raised=False):
        self.outputs = outputs or {}  # key -> what the student returned (a tensor, or not)
        self.failure = failure  # StudentError / CheckFailed / WorkerFailure, or None
        self.inputs = inputs or {}  # what the variants need: inputs, reference weights, sizes
        self.raised = raised or failure is not None  # some call of the probe failed

    @property
    def ok(self):
        return self.failure is None and bool(self.outputs)


def _tensors(pair, count=2):
    if isinstance(pair, (tuple, list)) and len(pair) == count:
        return list(pair)
    return [pair] + [None] * (count - 1)


class ProbeKit:
    """What a target's ``Model`` works with for one probe: the sizes ``z``, inputs drawn from
    a generator of the probe's own name, the student's calls (``call`` keeps going past an
    error and remembers it; ``ctx.call`` raises), modules with the reference's weights."""

    def __init__(self, diagnoser, name, z=None, kind=None):
        self.diagnoser, self.z, self.kind = diagnoser, z, kind
        self.ctx = diagnoser.ctx(name)
        self.generator = diagnoser.generator(name)
        self.chapter = diagnoser.plan.chapter
        self.reference = targets.REFERENCES
        self.failures = []

    def randn(self, *shape, scale=1.0):
        return self.diagnoser.randn(self.generator, *shape, scale=scale)

    def call(self, obj, *args, count=2, **kwargs):
        try:
            return _tensors(self.ctx.call(obj, *args, **kwargs), count)
        except StudentError as error:
            self.failures.append(error)
            return [None] * count

    @staticmethod
    def tensors(result, count=2):
        return _tensors(result, count)

    @staticmethod
    def padding(batch, t):
        mask = torch.zeros(batch, 1, 1, t, dtype=torch.bool)
        mask[0, ..., t - 1:], mask[-1, ..., t - 2:] = True, True
        return mask

    def module(self, name, *args, **kwargs):
        """A student module with the reference's weights, the reference, its weights (float64)."""
        return self.diagnoser.module(name, self.ctx, *args, **kwargs)

    def arguments(self, name):
        return targets.get(name).arguments(self.chapter)


# -- mistakes found by their symptom, in the order they are tried --------------------------------
SYMPTOMS = {}  # mistake id -> Diagnoser method name, in the order they are tried


def symptom(mistake_id):
    """Declare the decorated Diagnoser method as the probe that shows ``mistake_id``:
    ``test(self, target, base)`` returns something true when the target shows it."""
    def register(method):
        SYMPTOMS[mistake_id] = method.__name__
        return method
    return register


class Diagnoser:
    def __init__(self, session, plan, outcomes, forced=False):
        self.session, self.plan, self.forced = session, plan, forced
        self.outcomes = {o.check.id: o for o in outcomes}
        self.failed = [o.check.id for o in outcomes if forced or o.status in ("failed", "timeout")]
        self.targets = [t for t in plan.targets if t in MODELS]
        self.probes = {}
        self.memo = {}
        self.tol = plan.tolerances["float32"]

    # -- a Context for the diagnosis (inputs and weights made here) ---------------------------
    def ctx(self, name):
        return Context(self.session, self.plan, SimpleNamespace(id=f"mistakes/{name}"))

    def generator(self, name):
        return torch.Generator().manual_seed(zlib.crc32(f"mistakes/{name}".encode()))

    def randn(self, g, *shape, scale=1.0):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).float()

    def category(self, check_id):
        return self.outcomes[check_id].check.category

    def probe(self, target, kind="standard"):
        key = (target, kind)
        if key not in self.probes:
            try:
                self.probes[key] = self._probe_at(target, kind)
            except (StudentError, CheckFailed, WorkerFailure) as failure:
                self.probes[key] = Probe(failure=failure)
        return self.probes[key]

    def module(self, name, ctx, *args, **kwargs):
        """A student module with the reference's weights; also returns them (float64)."""
        obj, ref = ctx.with_own_sublayers(name, *args, **kwargs)
        return obj, ref, {k: v.detach().double() for k, v in ref.state_dict().items()}

    # -- probes: the target on inputs made here, at a few sizes -----------------------------------
    def probe_sizes(self, kind):
        """The sizes of a probe. "standard": other than the chapter's (a hard-coded size shows,
        and d_k != num_heads, so that √d_model, d_k and √d_k all differ); "chapter": the
        chapter's own; "square": the chapter's with Tq == Tk; "long": a long sequence;
        "cube": batch, heads and lengths all 3 (what broadcasts by accident there still runs)."""
        c = self.plan.chapter
        if kind in ("chapter", "square"):
            t_q = c.length if kind == "square" else c.decoder_length
            return SimpleNamespace(d=c.d_model, h=c.num_heads, f=c.d_ff, dk=c.d_model // c.num_heads,
                                   tq=t_q, tk=c.length, t=c.length, pe=(c.length, c.d_model),
                                   ffn=(c.d_model, c.d_ff), causal=c.length, b=2)
        if kind == "cube":
            return SimpleNamespace(d=12, h=3, f=10, dk=4, tq=3, tk=3, t=3, pe=(3, 10), ffn=(6, 10),
                                   causal=3, b=3)
        t = 80 if kind == "long" else None
        return SimpleNamespace(d=12, h=3, f=10, dk=6, tq=t or 4, tk=t or 5, t=t or 5,
                               pe=(t or 9, 10), ffn=(6, 10), causal=t or 6, b=2)

    def _probe_at(self, target, kind):
        """The target on a few inputs of the sizes ``kind``. A call that raises leaves its
        outputs out (the others still count); failing to build the module fails the probe."""
        kit = ProbeKit(self, f"{target}/{kind}", self.probe_sizes(kind), kind)
        outputs, inputs = MODELS[target].probe(kit)
        probe = Probe(outputs, inputs=inputs, raised=bool(kit.failures))
        if kit.failures and all(value is None for value in probe.outputs.values()):
            probe.failure = kit.failures[0]
        return probe

    def expected(self, target, probe, flags, fill=float("-inf")):
        """What the reference with ``flags`` switched on returns on the probe's inputs: key ->
        tensor (None where the variant says nothing)."""
        i = {k: (v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v)
             for k, v in probe.inputs.items()}
        try:
            with torch.no_grad():
                return MODELS[target].expected(i, flags, fill)
        except (Unmodelled, RuntimeError):
            return {}

    # -- comparing ---------------------------------------------------------------------------
    def same(self, got, want):
        if not isinstance(want, torch.Tensor):
            return None  # not compared
        if not isinstance(got, torch.Tensor) or isinstance(got, RemoteTensor) or got.shape != want.shape:
            return False
        if want.dtype == torch.bool:
            got = got.bool() if got.dtype == torch.bool or not got.is_floating_point() else got != 0
            return bool(torch.equal(got, want))
        return bool(torch.allclose(got.double(), want.double(), rtol=self.tol.rtol, atol=self.tol.atol,
                                   equal_nan=True))

    def matches(self, target, probe, flags):
        """The probe's outputs equal the variant's (every key the variant computes)."""
        fills = (float("-inf"), -1e9) if self._masks_whole_rows(flags) else (float("-inf"),)
        for fill in fills:
            want = self.expected(target, probe, flags, fill)
            verdicts = [self.same(probe.outputs.get(k), w) for k, w in want.items()]
            compared = [v for v in verdicts if v is not None]
            if compared and all(compared):
                return True
        return False

    @staticmethod
    def _masks_whole_rows(flags):
        return bool(flags & {"mask_inverted", "causal_tril", "causal_tril_strict", "causal_diag"})

    def distinct(self, target, probe, flags, base):
        """The variant differs from ``base`` (the reference, or a root mistake) on the probe."""
        want, ref = self.expected(target, probe, flags), self.expected(target, probe, base)
        for k, w in want.items():
            r = ref.get(k)
            if isinstance(w, torch.Tensor) and isinstance(r, torch.Tensor):
                if w.shape != r.shape:
                    return True
                if w.dtype == torch.bool:
                    if not torch.equal(w, r):
                        return True
                elif not torch.allclose(w, r, rtol=5 * self.tol.rtol, atol=5 * self.tol.atol,
                                        equal_nan=True):
                    return True
        return False

    # -- the search ----------------------------------------------------------------------------
    def run(self):
        roots, found = [], {}
        for target in self.targets:
            failed = [c for c in self.failed if self.outcomes[c].check.target == target]
            if not failed:
                continue
            left, base = list(failed), frozenset()
            for root in roots:
                if target in root["users"] and self.confirms(root, target):
                    explained = [c for c in left if self.explainable(root["mistake"], c)]
                    root["explains"] += explained
                    left = [c for c in left if c not in explained]
                    base |= root["flags"]
            if not left or (not self.forced and self._part_wrong_unnamed(target, found)):
                continue
            hit = self._detect(target, base, left)
            if hit is None:
                continue
            mistake, flags = hit
            explains = [c for c in left if self.explainable(mistake, c)]
            if mistake.id == "batch_items_mixed" and (flags or self._right_alone(target)):
                # the values are exactly those of the mixing (or right for a batch of one)
                explains += [c for c in left if self.category(c) in VALUES | MASKING
                             and c not in explains]
            if not explains and not self.forced:
                continue
            root = {"target": target, "mistake": mistake, "flags": base | flags, "explains": explains,
                    "users": targets.users_of(target, self.targets)}
            roots.append(root)
            found[target] = root
        order = {c: i for i, c in enumerate(self.outcomes)}
        return [Diagnosis(target, r["mistake"].id, r["mistake"].title, r["mistake"].hint,
                          tuple(sorted(set(r["explains"]), key=order.get)))
                for target, r in found.items()]

    def _part_wrong_unnamed(self, target, found):
        """A graded part of ``target`` fails its own checks and no mistake was named there: the
        target runs on that part, so whatever it does wrong may be the part's, and naming a
        mistake of the target would put the root in the wrong place (a scaled_dot_product_attention
        that halves its scores makes MultiHeadAttention look as if it scaled twice)."""
        graded = set(self.plan.targets)
        return any(part in graded and part not in found
                   and any(self.outcomes[c].check.target == part for c in self.failed)
                   for part in targets.parts_of(target))

    def explainable(self, mistake, check_id):
        category = self.category(check_id)
        if mistake.id == "inputs_modified_in_place" and category == "gradient_flow":
            # autograd refuses an in-place change of an input that requires a gradient
            message = self.outcomes[check_id].message
            text = message.en.lower() if message else ""
            return "in-place" in text or "inplace" in text or "cannot resize" in text
        return category in mistake.explains

    def candidates(self, target):
        """The value mistakes to look for in ``target``: its own, and those of its parts that
        the plan does not grade on their own or that are right on their own (a
        MultiHeadAttention that writes the attention out itself, e.g. with the mask inverted,
        while its scaled_dot_product_attention is right: the mistake is the target's own)."""
        graded = set(self.plan.targets)
        homes = [target] + [p for p in targets.parts_of(target)
                            if p not in graded or self._part_matches_reference(p)]
        homes.append(ANY)  # e.g. a (T, B, D) layout, a forward that returns its input
        return [m for m in CATALOGUE if m.home in homes and m.variants]

    def _detect(self, target, base, failed):
        categories = {self.category(c) for c in failed}
        probe = self.probe(target)
        structural = self._structural(target, probe)
        if structural:
            return structural, frozenset()
        for sample in self._samples(target, probe):
            if sample.ok and not self.matches(target, sample, base):
                found = [(m, flags) for m in self.candidates(target) for flags in m.variants
                         if self.matches(target, sample, base | flags)
                         and self.distinct(target, sample, base | flags, base)]
                found = list({m.id: (m, f) for m, f in reversed(found)}.values())[::-1]  # first variant
                if found:
                    return max(found, key=lambda hit: self._standing(target, *hit)) if len(found) > 1 \
                        else found[0]
        for mistake_id, method in SYMPTOMS.items():
            test = getattr(self, method)
            if (self.forced or categories & BY_ID[mistake_id].called_for_by) and self._memo(
                    mistake_id, target, lambda: test(target, base)):
                return BY_ID[mistake_id], frozenset()
        return None

    def _samples(self, target, probe):
        """The probes a variant is looked for on: the standard one, and where that raised for a
        target of two lengths, the square one (code that raises only when Tq != Tk, e.g. values
        projected from q, is still recognised by what it computes when Tq == Tk)."""
        yield probe
        if probe.raised and MODELS[target].two_lengths:
            yield self.probe(target, "square")
        if probe.raised and MODELS[target].cube:
            yield self.probe(target, "cube")

    def _part_matches_reference(self, part):
        """The part, probed on its own, gives what the reference does."""
        probe = self.probe(part)
        return probe.ok and self.matches(part, probe, frozenset())

    def _standing(self, target, mistake, flags):
        """Several mistakes give the same outputs (e.g. a decoder that passes no mask, and an
        attention that ignores it): ask the part itself. 3: the part, probed on its own, shows
        this mistake; 2: a mistake of the target itself; 1: the part cannot tell; 0: the part on
        its own is right."""
        if mistake.home in (target, ANY):
            return 2
        probe = self.probe(mistake.home)
        if not probe.ok:
            return 1
        if self.matches(mistake.home, probe, flags):
            return 3
        return 0 if self._part_matches_reference(mistake.home) else 1

    # The contract's linear layers of a kind of module, and the mistake of building them without a bias.
    LINEARS = {targets.MHA: (("wq", "wk", "wv", "wo"), "mha.bias_false"),
               targets.FFN: (("l1", "l2"), "ffn.bias_false")}

    def _prefixes(self, target, kind):
        """Where the target holds a module of ``kind`` (itself, or its sub-modules)."""
        if target == kind:
            return ("",)
        declared = targets.get(target).submodules if target in targets.TARGETS else {}
        return tuple(f"{path}." for path, sub in declared.items() if sub == kind)

    def _structural(self, target, probe):
        """bias=False: copying the reference's weights failed, and the linear layers the
        contract names have weights but no biases (the attention's first, then the FFN's)."""
        if not isinstance(probe.failure, CheckFailed):
            return None

        def test():
            names = self.session.new(target, *targets.get(target).arguments(self.plan.chapter)).aliases
            for kind, (layers, mistake) in self.LINEARS.items():
                linears = [f"{p}{w}" for p in self._prefixes(target, kind) for w in layers]
                if linears and all(f"{name}.weight" in names for name in linears) and any(
                        f"{name}.bias" not in names for name in linears):
                    return mistake
            return None
        found = self._memo("structural", target, test)
        return BY_ID[found] if found else None

    def _memo(self, name, target, test):
        key = (name, target)
        if key not in self.memo:
            self.memo[key] = self._guarded(test)
        return self.memo[key]

    # -- confirming a root mistake in a target built on it ---------------------------------------
    # Symptoms whose probe also tells whether a target built on the part shows it.
    CONFIRMED_BY_SYMPTOM = ("graph_detached", "fixed_device", "dropout_in_eval", "squeezed_axes",
                            "batch_items_mixed", "hardcoded_sizes")

    def confirms(self, root, target):
        mistake = root["mistake"]
        if mistake.variants:
            return any(probe.ok and self.matches(target, probe, root["flags"]) and not self.matches(
                target, probe, frozenset()) for probe in self._samples(target, self.probe(target)))
        if mistake.id in ("mha.bias_false", "ffn.bias_false"):
            return self._structural(target, self.probe(target)) is mistake
        if mistake.id == "sdpa.head_axis":
            return self._memo("raises_in_sdpa", target, lambda: self._raises_in_sdpa(target))
        if mistake.id not in self.CONFIRMED_BY_SYMPTOM:
            return False
        test = getattr(self, SYMPTOMS[mistake.id])
        here = self._memo(mistake.id, target, lambda: test(target, frozenset()))
        if mistake.id == "squeezed_axes" and not here:
            # the part drops size-1 axes; the target built on it is right at other sizes
            probe = self.probe(target)
            return probe.ok and self.matches(target, probe, frozenset())
        if mistake.id == "fixed_device":  # the same error, raised at the same place as the root's
            there = self._memo(mistake.id, root["target"], lambda: None)
            return bool(here and there) and here[0] == there[0] and bool(here[1] & there[1])
        return bool(here)

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


def _squeezed_copy(got, want, tol):
    """``got`` is ``want`` with some size-1 axes dropped."""
    if not isinstance(got, torch.Tensor) or isinstance(got, RemoteTensor) or got.shape == want.shape:
        return False
    if got.numel() != want.numel() or [n for n in got.shape if n != 1] != [n for n in want.shape if n != 1]:
        return False
    return bool(torch.allclose(got.reshape(want.shape).double(), want.double(), rtol=tol.rtol, atol=tol.atol))


def diagnose(session, plan, outcomes, forced=False):
    """At most one Diagnosis per target with failed checks. ``forced`` (tests only): look
    everywhere as if every check had failed, to show that correct code is never diagnosed."""
    if not forced and not any(o.status in ("failed", "timeout") for o in outcomes):
        return ()
    return tuple(Diagnoser(session, plan, outcomes, forced).run())


__all__ = ["Diagnoser", "Probe", "ProbeKit", "SYMPTOMS", "causal_like", "diagnose", "symptom"]
