"""Every size tried: per target, one check that compares the student's code with the reference
on generated configurations.

The contract says every size >= 1 is valid input. Each check here first tries fixed edge
configurations (a batch of one, one token, Tq != Tk, one head, d_k = 1, a long sequence), then
configurations that Hypothesis generates from strategies, with a seed derived from the course
(the assignment and its sizes), so the same submission always gets the same report. A failure
is shrunk and reported as the smallest failing configuration found; generated sizes can be
shown, but no number equal to one of course.toml's hidden sizes is ever generated or used as an
edge (1 excepted), in any role, so none of them appears in a message (and grading's masking of
such numbers, which applies since these checks read the hidden sizes to avoid them, changes
nothing). Passing costs at most about 15 worker requests per check.

MultiHeadAttention is graded around its own scaled_dot_product_attention when it calls it (as
``mha.numeric`` is: that function's bug is charged to its own checks and ``mha.integration``).
The blocks are compared exactly as written (their own sub-layers, the reference's weights), so
a sub-layer's bug also shows here; ``mistakes.diagnose`` names it once, at its root.
"""

import gc
import json
import threading
import zlib
from dataclasses import dataclass, fields
from typing import Callable

import torch

from autograder.checks.attention_calls import around_sdpa, sdpa_standin
from autograder.checks.verdicts import first_output
from autograder.config import Sizes
from autograder.loading import AST_LOCK
from autograder.checks.registry import OUTPUT, WEIGHTS, CheckFailed, check, fail
from autograder.texts import bilingual

SDPA, MHA, PE, FFN, ENC, DEC = ("scaled_dot_product_attention", "MultiHeadAttention",
                                "positional_encoding", "FeedForward", "EncoderBlock", "DecoderBlock")
LONG = (64, 128)  # a long sequence
SHORT = (1, 12)
REQUEST_BUDGET_FAILING = 45  # requests a failing check may spend on shrinking
# Hypothesis' runner keeps global state, and it parses source (lambdas) with ast, which is not
# thread-safe in CPython 3.11 (see loader.AST_LOCK): one search at a time, no parse beside it.
_HYPOTHESIS = AST_LOCK
CALLS_PER_REQUEST = 16
_GENERATED = {}  # (check, seed, ...) -> the configurations Hypothesis generates when all pass
_GENERATED_LOCK = threading.Lock()

TITLE = bilingual("Benar pada semua ukuran yang dicoba (batch 1, satu token, Tq ≠ Tk, satu head, "
                  "d_k = 1, urutan panjang, ukuran acak)",
                  "Correct on every size tried (batch of one, one token, Tq ≠ Tk, one head, "
                  "d_k = 1, long sequences, generated sizes)")


def _hint(extra_id, extra_en):
    return bilingual(
        "Setiap ukuran ≥ 1 adalah masukan yang sah. Ambil ukuran dari argumen dan dari bentuk "
        "masukan (jangan angka tetap), dan jangan membuang sumbu berukuran 1 (`.squeeze()`). "
        + extra_id,
        "Every size >= 1 is valid input. Take sizes from the arguments and the input's shape "
        "(never fixed numbers), and never drop size-1 axes (`.squeeze()`). " + extra_en)


def _raised(error):
    return bilingual(f"kode Anda memunculkan {error.type}: {error.message[:300]}",
                     f"your code raised {error.type}: {error.message[:300]}")


@dataclass(frozen=True)
class Probe:
    """One configuration's call of the student's code, and how its result is judged here."""

    target: object  # a function name or a student object
    args: tuple
    kwargs: dict
    judge: Callable  # judge(result, Records of ``functions``): returns when right, else fail(...)
    functions: tuple = ()  # the student's module-level functions to record (``records``)
    standins: dict | None = None  # for them, as ``ctx.record`` takes them


class _Fails(Exception):
    def __init__(self, config, message):
        super().__init__(config)
        self.config, self.message = config, message


class Search:
    """Edge configurations, then generated ones, each evaluated once; the smallest failing one
    found is reported.

    ``fields``: name -> smallest valid value, in the order they are shrunk; ``evaluate(config)``
    returns None when the student's code agrees with the reference there, else a Bilingual
    saying what is wrong; ``valid(config)`` says whether a configuration may be tried (and
    shown); ``show(config)`` writes it for the student."""

    def __init__(self, ctx, fields, evaluate, valid, show, requests, prepare=None):
        self.ctx, self.fields, self._evaluate = ctx, fields, evaluate
        self.valid, self.show, self.requests = valid, show, requests
        self.prepare = prepare
        self.results = {}
        self.spent = 0  # worker requests
        self.limit = None

    @classmethod
    def of_probes(cls, ctx, fields, prepare, valid, show, requests):
        """A search whose configurations are ``prepare(config) -> Probe``: the first pass sends
        every configuration's call in one request; the ones that fail are searched one by one."""
        def evaluate(config):
            probe = prepare(config)
            probe.judge(*ctx.record(probe.target, *probe.args, functions=probe.functions,
                                    standins=probe.standins, **probe.kwargs))
        return cls(ctx, fields, evaluate, valid, show, requests, prepare)

    def key(self, config):
        return tuple(config[name] for name in self.fields)

    def result(self, config):
        key = self.key(config)
        if key not in self.results:
            if self.limit is not None and self.spent >= self.limit:
                return None  # out of budget: what was not tried counts as passing
            self.spent += self.requests(config)
            try:
                self._evaluate(config)
                self.results[key] = None
            except CheckFailed as failed:
                self.results[key] = failed.message
            except self.ctx.StudentError as error:
                self.results[key] = _raised(error)
        return self.results[key]

    def run(self, edges, strategy, seed, examples):
        generated = self._what_hypothesis_generates(strategy, seed, examples)
        if self.prepare is not None:
            self._together(list(edges) + generated)
        failing = next(((edge, self.result(edge)) for edge in edges
                        if self.result(edge) is not None), None)
        if failing is not None:  # an edge: shrink it here (Hypothesis shrinks what it generates)
            self.limit = self.spent + REQUEST_BUDGET_FAILING
            failing = self._shrink(*failing)
        elif any(self.results.get(self.key(c), True) is not None for c in generated):
            failing = self._generated(strategy, seed, examples)  # replays what passed, shrinks
        if failing is not None:
            config, message = failing
            shown = self.show(config)
            shown = shown if not isinstance(shown, str) else bilingual(shown, shown)
            fail(bilingual(f"Salah pada ukuran {shown.id}: {message.id}",
                           f"Wrong at sizes {shown.en}: {message.en}"))

    def _what_hypothesis_generates(self, strategy, seed, examples):
        """The configurations Hypothesis generates while every one passes: the same for every
        submission (the seed is the course's), so found once per process and check."""
        key = (getattr(self.ctx.check, "id", None), seed, examples, tuple(self.fields),
               tuple(sorted(_hidden_numbers(self.ctx))))  # not repr(strategy): it parses lambdas
        with _GENERATED_LOCK:
            found = _GENERATED.get(key)
        if found is None:
            found = []

            def collect(config):
                if config not in found:
                    found.append(dict(config))
            with _HYPOTHESIS:
                self._hypothesis(strategy, seed, examples, collect)()
            with _GENERATED_LOCK:
                found = _GENERATED.setdefault(key, found)
        return [dict(c) for c in found]

    def _together(self, configs):
        """Every configuration not yet tried, prepared here and called in the worker in one
        request per ``CALLS_PER_REQUEST``, judged here. When a call raises, the rest are left to
        be tried one by one (so the error is that configuration's)."""
        probes = []
        for config in configs:
            key = self.key(config)
            if key in self.results or not self.valid(config) or any(k == key for k, _ in probes):
                continue
            self.spent += self.requests(config)
            try:
                probes.append((key, self.prepare(config)))
            except CheckFailed as failed:
                self.results[key] = failed.message
            except self.ctx.StudentError as error:
                self.results[key] = _raised(error)
        if not hasattr(self.ctx.session, "calls_recording"):  # no batched calls: one by one
            return
        timeout = getattr(self.ctx.session, "request_timeout", None)
        for start in range(0, len(probes), CALLS_PER_REQUEST):
            chunk = probes[start:start + CALLS_PER_REQUEST]
            runs = [{"target": p.target, "args": p.args, "kwargs": p.kwargs, "functions": p.functions,
                     "standins": p.standins} for _, p in chunk]
            try:
                answers = self.ctx.record_many(runs, timeout=timeout and timeout * min(len(chunk), 3))
            except self.ctx.StudentError:
                return
            for (key, probe), (result, records) in zip(chunk, answers):
                try:
                    probe.judge(result, records)
                    self.results[key] = None
                except CheckFailed as failed:
                    self.results[key] = failed.message

    def _hypothesis(self, strategy, seed, examples, test):
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings
        from hypothesis import seed as with_seed

        run = settings(database=None, max_examples=examples, deadline=None, derandomize=False,
                       phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck),
                       verbosity=Verbosity.quiet, report_multiple_bugs=False, print_blob=False)(
            with_seed(seed)(given(strategy.filter(self.valid))(test)))

        def without_its_gc_callback():
            # Hypothesis times garbage collections with a callback it adds once and keeps. A
            # Ctrl-C that lands in it is swallowed ("Exception ignored in"): in the grader,
            # where the warm-up runs Hypothesis, a batch would then not stop. No deadline here
            # needs that time.
            before = list(gc.callbacks)
            try:
                return run()
            finally:
                gc.callbacks[:] = [c for c in gc.callbacks if c in before]
        return without_its_gc_callback

    def _generated(self, strategy, seed, examples):
        def probe_one(config):
            message = self.result(config)
            if message is not None:
                raise _Fails(config, message)

        with _HYPOTHESIS:
            probe = self._hypothesis(strategy, seed, examples, probe_one)
            self.limit = self.spent + 3 * examples + REQUEST_BUDGET_FAILING
            try:
                probe()
            except _Fails as found:
                return found.config, found.message
            except Exception as error:  # e.g. Hypothesis' FlakyFailure wrapping ours
                found = [e for e in getattr(error, "exceptions", ()) if isinstance(e, _Fails)]
                if found:
                    smallest = min(found, key=lambda e: self.key(e.config))
                    return smallest.config, smallest.message
                raise
            finally:
                self.limit = None
        return None

    def _shrink(self, config, message):
        """Lower one field at a time while the configuration still fails: the smallest value
        first, then a binary search between the largest passing and the smallest failing one."""
        improved = True
        while improved:
            improved = False
            for name, smallest in self.fields.items():
                value = config[name]
                if smallest is None or value == smallest:
                    continue
                if not isinstance(value, int) or isinstance(value, bool):
                    candidates = [smallest]  # e.g. no mask
                else:
                    candidates = None
                if candidates is not None:
                    found = self._try(config, name, smallest)
                    if found:
                        config, message, improved = *found, True
                    continue
                low, high = smallest - 1, value  # low passes (or is below range), high fails
                while high - low > 1:
                    middle = (low + high) // 2 if low >= smallest else smallest
                    found = self._try(config, name, middle)
                    if found:
                        (config, message), high = found, middle
                    else:
                        low = middle
                if high < value:
                    improved = True
        return config, message

    def _try(self, config, name, value):
        """(config with name=value, its failure) when it is valid and fails, else None."""
        smaller = {**config, name: value}
        if not self.valid(smaller):
            return None
        found = self.result(smaller)
        return None if found is None else (smaller, found)


# -- helpers ------------------------------------------------------------------------------
def _seed(ctx):
    """From the course (the assignment and its sizes) and the check: one report per submission."""
    course = json.dumps([ctx.plan.name if hasattr(ctx.plan, "name") else "", _numbers(ctx.chapter),
                         _numbers(ctx.hidden), ctx.check.id], sort_keys=True)
    return zlib.crc32(course.encode())


def _generator(ctx, config):
    return torch.Generator().manual_seed(zlib.crc32(f"{ctx.check.id}/{sorted(config.items())}".encode()))


def _randn(generator, *shape):
    return torch.randn(*shape, generator=generator, dtype=torch.float64).float()


def _hidden_numbers(ctx):
    """Every number of course.toml's hidden sizes (d_k included). No configuration here holds
    one anywhere (1 excepted: an edge every list has), so no message can show one, in any role."""
    h = ctx.hidden
    return frozenset(_numbers(h).values()) | {h.d_model // h.num_heads}


def _numbers(sizes):
    """A ``config.Sizes`` (or the grader's watched view of one) as {name: number}."""
    return {f.name: getattr(sizes, f.name) for f in fields(Sizes)}


def _clear(ctx, config, fields, derived=()):
    """Every number of ``config[fields]`` (and the ``derived`` products of fields, e.g. d_model =
    heads * dk) is 1 or not a hidden size."""
    hidden = _hidden_numbers(ctx)
    numbers = [config[f] for f in fields] + [config[a] * config[b] for a, b in derived]
    return all(n == 1 or n not in hidden for n in numbers)


def _edges(ctx, edges, valid, fields, step=None):
    """The edge configurations, each number that is a hidden size (or d_model = heads * dk
    that is one) moved up past it; the mandated 1s stay, a long sequence stays long."""
    hidden, step, repaired = _hidden_numbers(ctx), step or {}, []
    for edge in map(dict, edges):
        for _ in range(16):
            if valid(edge):
                break
            bad = next((f for f in fields if edge[f] != 1 and edge[f] in hidden), None)
            if bad is None and "dk" in edge and edge["heads"] * edge["dk"] in hidden:
                bad = "dk" if edge["dk"] != 1 else "heads"
            if bad is None:
                break
            edge[bad] += step.get(bad, 1)
        if valid(edge):
            repaired.append(edge)
    return repaired


def _lengths(st):
    return st.one_of(st.integers(*SHORT), st.integers(*LONG))


def _padding(batch, tk, kind):
    """A (B, 1, 1, Tk) padding mask that never blocks every key of an item."""
    if kind != "padding" or tk < 2:
        return None
    mask = torch.zeros(batch, 1, 1, tk, dtype=torch.bool)
    for b in range(batch):
        blocked = (b + 1) % tk
        if blocked:
            mask[b, ..., tk - blocked:] = True
    return mask


def _mask(ctx, config, batch, tq, tk):
    kind = config.get("mask", "none")
    if kind == "causal" and tq == tk:
        return ctx.reference.causal_mask(tq)
    return _padding(batch, tk, "padding" if kind != "none" else "none")


def _expect_same(ctx, got, expected, what, exact=None):
    """``got`` agrees with the reference's float32 ``expected``; with ``exact`` (the reference
    in float64), agreeing with ``exact`` as closely as float32 itself can is enough. Generated
    sizes include ill-conditioned ones (a LayerNorm over d_model = 2, a 128-token softmax) where
    the float32 reference is itself off, and a student who computes more exactly must not lose."""
    ctx.tensor(got, what, shape=expected.shape)
    if exact is not None and got.numel() and not got.is_complex():
        tolerance = ctx.tolerance("float32")
        noise = float((expected.double() - exact).abs().max())
        bound = tolerance.atol + tolerance.rtol * exact.abs() + 10 * noise
        if bool(((got.double() - exact).abs() <= bound).all()):
            return
    ctx.expect_close(got, expected, what)


class _Reference:
    """The reference module at one configuration, in float32 and in float64 (same weights)."""

    def __init__(self, ctx, name, args, kwargs, float32):
        self.float32 = float32
        self.float64 = ctx.shared_reference(name, *args, dtype="float64", **kwargs)

    def __call__(self, *inputs):
        """(float32 result, float64 result)."""
        with torch.no_grad():
            return self.float32(*inputs), self.float64(*(_float64(i) for i in inputs))


def _float64(value):
    return value.double() if isinstance(value, torch.Tensor) and value.is_floating_point() else value


def _modules(ctx, name):
    """(student object holding the reference's weights, ``_Reference``) per constructor
    arguments, built once per check."""
    cache = {}

    def get(*args, **kwargs):
        key = (args, tuple(sorted(kwargs.items())))
        if key not in cache:
            obj, ref = ctx.with_own_sublayers(name, *args, **kwargs)
            cache[key] = obj, _Reference(ctx, name, args, kwargs, ref)
        return cache[key]
    return get


# -- scaled_dot_product_attention ---------------------------------------------------------------
@check("sdpa.sizes", assignment="attention", target=SDPA, category="hidden_config", points=1,
       needs=("sdpa.shape",), title=TITLE,
       hint=_hint("q, k dan v boleh punya Tq, Tk, d_k, d_v dan sumbu batch berapa pun.",
                  "q, k and v may have any Tq, Tk, d_k, d_v and batch axes."))
def sdpa_sizes(ctx):
    from hypothesis import strategies as st

    def prepare(c):
        g = _generator(ctx, c)
        batch = (c["b"], c["h"])
        q = _randn(g, *batch, c["tq"], c["dk"])
        k, v = _randn(g, *batch, c["tk"], c["dk"]), _randn(g, *batch, c["tk"], c["dv"])
        mask = _mask(ctx, c, c["b"], c["tq"], c["tk"])

        def judge(result, records):
            out, weights = ctx.pair(result, SDPA)
            ref_out, ref_weights = ctx.reference.scaled_dot_product_attention(q, k, v, mask)
            exact_out, exact_weights = ctx.reference.scaled_dot_product_attention(
                q.double(), k.double(), v.double(), mask)
            _expect_same(ctx, weights, ref_weights, WEIGHTS, exact_weights)
            _expect_same(ctx, out, ref_out, OUTPUT, exact_out)
        return Probe(SDPA, (q, k, v), {} if mask is None else {"mask": mask}, judge)

    def show(c):
        return _shown(f"q {(c['b'], c['h'], c['tq'], c['dk'])}, k {(c['b'], c['h'], c['tk'], c['dk'])}, "
                      f"v {(c['b'], c['h'], c['tk'], c['dv'])}", _mask_words(c))

    fields = {"b": 1, "h": 1, "tq": 1, "tk": 1, "dk": 1, "dv": 1, "mask": "none"}
    edges = [dict(b=1, h=1, tq=1, tk=1, dk=1, dv=1, mask="none"),
             dict(b=1, h=2, tq=3, tk=5, dk=1, dv=2, mask="padding"),
             dict(b=2, h=1, tq=96, tk=96, dk=5, dv=3, mask="causal")]
    strategy = st.fixed_dictionaries(dict(
        b=st.integers(1, 3), h=st.integers(1, 3), tq=_lengths(st), tk=_lengths(st),
        dk=st.integers(1, 9), dv=st.integers(1, 9), mask=st.sampled_from(("none", "padding", "causal"))))
    numbers = ("b", "h", "tq", "tk", "dk", "dv")
    search = Search.of_probes(ctx, fields, prepare, lambda c: _clear(ctx, c, numbers), show, lambda c: 1)
    search.run(_edges(ctx, edges, search.valid, numbers), strategy, _seed(ctx), examples=8)


def _mask_words(c):
    """(Indonesian, English) words for the configuration's mask, if it has one."""
    kind = c.get("mask", "none")
    if kind == "causal" and c.get("tq") == c.get("tk", c.get("tq")):
        return ", dengan mask kausal", ", with a causal mask"
    if kind != "none" and c.get("tk", c.get("t", 1)) > 1:
        return ", dengan mask padding", ", with a padding mask"
    return "", ""


def _shown(text, mask_words=("", "")):
    return bilingual(text + mask_words[0], text + mask_words[1])


# -- MultiHeadAttention --------------------------------------------------------------------------
@check("mha.sizes", assignment="attention", target=MHA, category="hidden_config", points=1,
       needs=("mha.shape",), title=TITLE,
       hint=_hint("Batch 1 tetap (1, Tq, D); satu head dan d_k = 1 (d_model == num_heads) juga sah.",
                  "A batch of one stays (1, Tq, D); one head and d_k = 1 (d_model == num_heads) are "
                  "valid too."))
def mha_sizes(ctx):
    from hypothesis import strategies as st

    module = _modules(ctx, MHA)

    def prepare(c):
        d = c["heads"] * c["dk"]
        obj, ref = module(d, c["heads"])
        g = _generator(ctx, c)
        q, k, v = _randn(g, c["b"], c["tq"], d), _randn(g, c["b"], c["tk"], d), _randn(g, c["b"], c["tk"], d)
        mask = _mask(ctx, c, c["b"], c["tq"], c["tk"])

        def judge(result, records):
            out, weights = ctx.pair(result, "MultiHeadAttention.forward")
            around = around_sdpa(ctx, ref.float32, q, k, v, mask, records.of(SDPA))
            if around:  # graded around its own scaled_dot_product_attention, as mha.numeric is
                for got, wanted, what in ((out, around[0], OUTPUT), (weights, around[1], WEIGHTS)):
                    ctx.tensor(got, what, shape=wanted.shape)
                    if not ctx.same(got, wanted):  # NaN that came from that function is its own
                        _expect_same(ctx, got, wanted, what)
                return
            (ref_out, ref_weights), (exact_out, exact_weights) = ref(q, k, v, mask)
            _expect_same(ctx, out, ref_out, OUTPUT, exact_out)
            _expect_same(ctx, weights, ref_weights, WEIGHTS, exact_weights)
        return Probe(obj, (q, k, v), {} if mask is None else {"mask": mask}, judge, functions=(SDPA,),
                     standins=sdpa_standin(ctx, c["heads"], q, k))

    def show(c):
        return _shown(f"MultiHeadAttention(d_model={c['heads'] * c['dk']}, num_heads={c['heads']}), "
                      f"B={c['b']}, Tq={c['tq']}, Tk={c['tk']}", _mask_words(c))

    modules_seen = set()

    def requests(c):
        new = (c["heads"], c["dk"]) not in modules_seen
        modules_seen.add((c["heads"], c["dk"]))
        return 3 if new else 1

    numbers = ("b", "tq", "tk", "heads", "dk")

    def valid(c):
        return _clear(ctx, c, numbers, derived=(("heads", "dk"),))

    fields = {"b": 1, "tq": 1, "tk": 1, "heads": 1, "dk": 1, "mask": "none"}
    edges = [dict(b=1, tq=1, tk=2, heads=1, dk=6, mask="none"),
             dict(b=2, tq=5, tk=1, heads=5, dk=1, mask="none"),
             dict(b=1, tq=80, tk=80, heads=2, dk=5, mask="causal")]
    strategy = st.fixed_dictionaries(dict(
        b=st.integers(1, 4), tq=_lengths(st), tk=_lengths(st), heads=st.integers(1, 6),
        dk=st.integers(1, 6), mask=st.sampled_from(("none", "padding", "causal"))))
    search = Search.of_probes(ctx, fields, prepare, valid, show, requests)
    search.run(_edges(ctx, edges, valid, numbers), strategy, _seed(ctx), examples=2)


# -- positional_encoding ---------------------------------------------------------------------------
@check("pe.sizes", assignment="encoder", target=PE, category="hidden_config", points=1,
       needs=("pe.shape",), title=TITLE,
       hint=_hint("length dan d_model (genap) berapa pun: jangan menyiapkan tabel dengan panjang "
                  "maksimum tetap.",
                  "Any length and any even d_model: do not precompute a table with a fixed maximum "
                  "length."))
def pe_sizes(ctx):
    from hypothesis import strategies as st

    def prepare(c):
        def judge(result, records):
            label = f"positional_encoding({c['length']}, {c['d_model']})"
            pe = ctx.tensor(result, label, shape=(c["length"], c["d_model"]))
            expected = ctx.reference.positional_encoding(c["length"], c["d_model"])
            ctx.expect_close(pe.double(), expected.double(), bilingual("Nilainya", "Its values"),
                             "positional_encoding")
        return Probe(PE, (c["length"], c["d_model"]), {}, judge)

    def valid(c):
        return c["d_model"] % 2 == 0 and _clear(ctx, c, ("length", "d_model"))

    fields = {"length": 1, "d_model": 2}
    edges = [dict(length=1, d_model=2), dict(length=2, d_model=6), dict(length=128, d_model=10),
             dict(length=5, d_model=66)]
    strategy = st.fixed_dictionaries(dict(length=_lengths(st),
                                          d_model=st.integers(1, 40).map(lambda n: 2 * n)))
    search = Search.of_probes(ctx, fields, prepare, valid,
                              lambda c: f"length={c['length']}, d_model={c['d_model']}", lambda c: 1)
    search.run(_edges(ctx, edges, valid, ("length", "d_model"), step={"d_model": 2}), strategy,
               _seed(ctx), examples=8)


# -- FeedForward -------------------------------------------------------------------------------
@check("ffn.sizes", assignment="encoder", target=FFN, category="hidden_config", points=1,
       needs=("ffn.shape",), title=TITLE,
       hint=_hint("Pakai d_model dan d_ff dari argumen; FeedForward bekerja pada tiap token, "
                  "berapa pun B dan T.",
                  "Use d_model and d_ff from the arguments; FeedForward works on every token, "
                  "whatever B and T."))
def ffn_sizes(ctx):
    from hypothesis import strategies as st

    module = _modules(ctx, FFN)

    def prepare(c):
        obj, ref = module(c["d_model"], c["d_ff"])
        x = _randn(_generator(ctx, c), c["b"], c["t"], c["d_model"]) * 2

        def judge(result, records):
            expected, exact = ref(x)
            _expect_same(ctx, result, expected, OUTPUT, exact)
        return Probe(obj, (x,), {}, judge)

    seen = set()

    def requests(c):
        new = (c["d_model"], c["d_ff"]) not in seen
        seen.add((c["d_model"], c["d_ff"]))
        return 3 if new else 1

    def valid(c):
        return _clear(ctx, c, ("b", "t", "d_model", "d_ff"))

    fields = {"b": 1, "t": 1, "d_model": 1, "d_ff": 1}
    edges = [dict(b=1, t=1, d_model=1, d_ff=1), dict(b=2, t=2, d_model=5, d_ff=2),
             dict(b=1, t=100, d_model=5, d_ff=2)]
    strategy = st.fixed_dictionaries(dict(b=st.integers(1, 4), t=_lengths(st),
                                          d_model=st.integers(1, 20), d_ff=st.integers(1, 40)))
    search = Search.of_probes(
        ctx, fields, prepare, valid,
        lambda c: f"FeedForward({c['d_model']}, {c['d_ff']}), x ({c['b']}, {c['t']}, {c['d_model']})",
        requests)
    search.run(_edges(ctx, edges, valid, ("b", "t", "d_model", "d_ff")), strategy, _seed(ctx), examples=2)


# -- EncoderBlock ---------------------------------------------------------------------------------
@check("enc.sizes", assignment="encoder", target=ENC, category="hidden_config", points=1,
       needs=("enc.sensitivity",), title=TITLE,
       hint=_hint("Blok dinilai utuh (dengan sub-layer Anda sendiri), pre-LN dan post-LN, dengan "
                  "dan tanpa mask padding.",
                  "The block is graded whole (with your own sub-layers), pre-LN and post-LN, with and "
                  "without a padding mask."))
def enc_sizes(ctx):
    from hypothesis import strategies as st

    module = _modules(ctx, ENC)

    def prepare(c):
        d = c["heads"] * c["dk"]
        obj, ref = module(d, c["heads"], c["d_ff"], prenorm=c["prenorm"])
        x = _randn(_generator(ctx, c), c["b"], c["t"], d)
        mask = _padding(c["b"], c["t"], c["mask"])

        def judge(result, records):
            expected, exact = ref(x, mask)
            _expect_same(ctx, first_output(ctx, result, OUTPUT), expected, OUTPUT, exact)
        return Probe(obj, (x,), {} if mask is None else {"mask": mask}, judge)

    seen = set()

    def requests(c):
        key = (c["heads"], c["dk"], c["d_ff"], c["prenorm"])
        new = key not in seen
        seen.add(key)
        return 3 if new else 1

    numbers = ("b", "t", "heads", "dk", "d_ff")

    def valid(c):
        return _clear(ctx, c, numbers, derived=(("heads", "dk"),))

    def show(c):
        return _shown(f"EncoderBlock({c['heads'] * c['dk']}, {c['heads']}, {c['d_ff']}, "
                      f"prenorm={c['prenorm']}), x ({c['b']}, {c['t']}, {c['heads'] * c['dk']})",
                      _mask_words({"mask": c["mask"], "tk": c["t"]}))

    fields = {"b": 1, "t": 1, "heads": 1, "dk": 1, "d_ff": 1, "prenorm": None, "mask": "none"}
    edges = [dict(b=1, t=1, heads=1, dk=5, d_ff=2, prenorm=False, mask="none"),
             dict(b=2, t=6, heads=2, dk=1, d_ff=5, prenorm=True, mask="padding"),
             dict(b=1, t=70, heads=2, dk=5, d_ff=6, prenorm=False, mask="none")]
    strategy = st.fixed_dictionaries(dict(
        b=st.integers(1, 4), t=_lengths(st), heads=st.integers(1, 5), dk=st.integers(1, 5),
        d_ff=st.integers(1, 24), prenorm=st.booleans(), mask=st.sampled_from(("none", "padding"))))
    search = Search.of_probes(ctx, fields, prepare, valid, show, requests)
    search.run(_edges(ctx, edges, valid, numbers), strategy, _seed(ctx), examples=2)


# -- DecoderBlock ---------------------------------------------------------------------------------
@check("dec.sizes", assignment="decoder", target=DEC, category="hidden_config", points=1,
       needs=("dec.sensitivity",), title=TITLE,
       hint=_hint("Tdec dan Tsrc boleh berbeda (dan bernilai 1); mask kausal berukuran Tdec dari "
                  "masukan, berapa pun panjangnya.",
                  "Tdec and Tsrc may differ (and be 1); the causal mask has the input's Tdec, however "
                  "long."))
def dec_sizes(ctx):
    from hypothesis import strategies as st

    module = _modules(ctx, DEC)

    def prepare(c):
        d = c["heads"] * c["dk"]
        obj, ref = module(d, c["heads"], c["d_ff"])
        g = _generator(ctx, c)
        x, memory = _randn(g, c["b"], c["tdec"], d), _randn(g, c["b"], c["tsrc"], d)

        def judge(result, records):
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                fail(bilingual("forward harus mengembalikan (keluaran, bobot cross-attention).",
                               "forward must return (output, cross-attention weights)."))
            (ref_out, ref_weights), (exact_out, exact_weights) = ref(x, memory)
            _expect_same(ctx, result[0], ref_out, OUTPUT, exact_out)
            _expect_same(ctx, result[1], ref_weights, bilingual("Bobot cross-attention",
                                                                "The cross-attention weights"),
                         exact_weights)
        return Probe(obj, (x, memory), {}, judge)

    seen = set()

    def requests(c):
        key = (c["heads"], c["dk"], c["d_ff"])
        new = key not in seen
        seen.add(key)
        return 3 if new else 1

    numbers = ("b", "tdec", "tsrc", "heads", "dk", "d_ff")

    def valid(c):
        return _clear(ctx, c, numbers, derived=(("heads", "dk"),))

    def show(c):
        d = c["heads"] * c["dk"]
        return (f"DecoderBlock({d}, {c['heads']}, {c['d_ff']}), x ({c['b']}, {c['tdec']}, {d}), "
                f"memory ({c['b']}, {c['tsrc']}, {d})")

    fields = {"b": 1, "tdec": 1, "tsrc": 1, "heads": 1, "dk": 1, "d_ff": 1}
    edges = [dict(b=1, tdec=1, tsrc=2, heads=1, dk=5, d_ff=2),
             dict(b=2, tdec=5, tsrc=1, heads=2, dk=1, d_ff=5),
             dict(b=1, tdec=70, tsrc=9, heads=2, dk=5, d_ff=6)]
    strategy = st.fixed_dictionaries(dict(
        b=st.integers(1, 4), tdec=_lengths(st), tsrc=_lengths(st), heads=st.integers(1, 5),
        dk=st.integers(1, 5), d_ff=st.integers(1, 24)))
    search = Search.of_probes(ctx, fields, prepare, valid, show, requests)
    search.run(_edges(ctx, edges, valid, numbers), strategy, _seed(ctx), examples=2)
