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
matches. A *symptom* mistake (``@symptom`` in ``checks.symptoms``, tried in the order they are
declared there) is recognised from a failed check of one of its trigger categories plus one
probe that shows the symptom directly: inputs changed in place, no gradient although the values
are right, an error on another device although the CPU works, size-1 axes missing from an
otherwise right output, batch items leaking into each other, right at the chapter's sizes and
wrong at others.

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
from autograder.checks.probes import Probe, ProbeKit
from autograder.checks.symptoms import SYMPTOMS, SymptomProbes, symptom
from autograder.checks.variants import MODELS, Unmodelled, causal_like
from autograder.records import Diagnosis

# What a NaN output makes fail besides the values: every comparison of two outputs, sums, gradients.
NAN_BREAKS = frozenset({"rows_sum_to_one", "gradient_flow", "batch_independence", "memory_path", "causality",
                        "masking", "permutation_equivariance", "layernorm_stats"})
from autograder.sandbox.process import StudentError, WorkerFailure
from autograder.sandbox.wire import RemoteTensor


class Diagnoser(SymptomProbes):
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
            if flags and self._nan_out(target):  # the mistake makes NaN: what NaN breaks follows from it
                explains += [c for c in left if self.category(c) in NAN_BREAKS and c not in explains]
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

    def _nan_out(self, target):
        """The target's probe (where a variant matched it, NaN for NaN) returned NaN."""
        return any(isinstance(v, torch.Tensor) and not isinstance(v, RemoteTensor) and bool(torch.isnan(v).any())
                   for sample in self._samples(target, self.probe(target)) if sample.ok
                   for v in sample.outputs.values() if isinstance(v, torch.Tensor) and v.is_floating_point())

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


def diagnose(session, plan, outcomes, forced=False):
    """At most one Diagnosis per target with failed checks. ``forced`` (tests only): look
    everywhere as if every check had failed, to show that correct code is never diagnosed."""
    if not forced and not any(o.status in ("failed", "timeout") for o in outcomes):
        return ()
    return tuple(Diagnoser(session, plan, outcomes, forced).run())


__all__ = ["Diagnoser", "Probe", "ProbeKit", "SYMPTOMS", "causal_like", "diagnose", "symptom"]
