"""Every size tried: per target, one check that compares the student's code with the reference
on generated configurations.

The contract says every size >= 1 is valid input. Each check here searches its target's
declared ``SizeSpace`` (``targets.py``: fixed edge configurations, a batch of one, one token,
Tq != Tk, one head, d_k = 1, a long sequence, then configurations Hypothesis generates) with the
generic search of ``search.py``; this module says how one configuration is called and judged.
Generated sizes can be shown, and so can what the student's code writes there: no number equal to
one of course.toml's hidden sizes is ever generated or used as an edge (1 excepted), in any role
(the checks read them through ``ctx.avoid``, which sends nothing to the worker). Passing costs at most about 15 worker requests per check.

MultiHeadAttention is graded around its own scaled_dot_product_attention when it calls it (as
``mha.numeric`` is: that function's bug is charged to its own checks and ``mha.integration``).
The blocks are compared exactly as written (their own sub-layers, the reference's weights), so
a sub-layer's bug also shows here; ``diagnosis.diagnose`` names it once, at its root.
"""

import torch

from autograder.checks import targets
from autograder.checks.attention_calls import around_sdpa, sdpa_standin
from autograder.checks.context import fingerprint
from autograder.checks.registry import OUTPUT, WEIGHTS, check, fail
from autograder.checks.search import Probe, drawn_once, search_sizes
from autograder.checks.targets import DEC, ENC, FFN, MHA, PE, SDPA
from autograder.checks.verdicts import first_output
from autograder.texts import bilingual

TITLE = bilingual("Benar pada semua ukuran yang dicoba (batch 1, satu token, Tq ≠ Tk, satu head, "
                  "d_k = 1, urutan panjang, ukuran acak)",
                  "Correct on every size tried (batch of one, one token, Tq ≠ Tk, one head, "
                  "d_k = 1, long sequences, generated sizes)")
PE_TITLE = bilingual("Benar pada semua ukuran yang dicoba (length 1, d_model 2, urutan panjang, ukuran acak)",
                     "Correct on every size tried (length 1, d_model 2, long sequences, generated sizes)")


def _hint(extra_id, extra_en):
    return bilingual(
        "Setiap ukuran ≥ 1 adalah masukan yang sah. Ambil ukuran dari argumen dan dari bentuk "
        "masukan (jangan angka tetap), dan jangan membuang sumbu berukuran 1 (`.squeeze()`). "
        + extra_id,
        "Every size >= 1 is valid input. Take sizes from the arguments and the input's shape "
        "(never fixed numbers), and never drop size-1 axes (`.squeeze()`). " + extra_en)


def _new_per_module(key):
    """``requests`` for a search whose configurations build a module once per ``key(config)``:
    building costs two more requests than calling."""
    seen = set()

    def requests(config):
        new = key(config) not in seen
        seen.add(key(config))
        return 3 if new else 1
    return requests


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


def _expect_same(ctx, got, expected, what, exact=None, bound=None):
    """``got`` agrees with the reference's float32 ``expected``; with ``exact`` (the reference
    in float64), agreeing with ``exact`` as closely as float32 itself can is enough. Generated
    sizes include ill-conditioned ones (a LayerNorm over d_model = 2, a 128-token softmax) where
    the float32 reference is itself off, and a student who computes more exactly must not lose.
    ``bound``: ``_bound(ctx, expected, exact)`` if already made (``_Reference.judged``)."""
    ctx.tensor(got, what, shape=expected.shape)
    if exact is not None and got.numel() and not got.is_complex():
        bound = _bound(ctx, expected, exact) if bound is None else bound
        if bool(((got.double() - exact).abs() <= bound).all()):
            return
    ctx.expect_close(got, expected, what)


def _bound(ctx, expected, exact):
    """How far from ``exact`` a result may be: the course tolerance, plus ten times how far
    the float32 reference ``expected`` itself is (None when there is nothing to compare)."""
    if not expected.numel():
        return None
    tolerance = ctx.tolerance("float32")
    noise = float((expected.double() - exact).abs().max())
    return tolerance.atol + tolerance.rtol * exact.abs() + 10 * noise


class _Reference:
    """The reference module at one configuration, in float32 and in float64 (same weights)."""

    def __init__(self, ctx, name, args, kwargs, float32):
        self.ctx, self.float32 = ctx, float32
        self.float64 = ctx.shared_reference(name, *args, dtype="float64", **kwargs)

    def __call__(self, *inputs):
        """(float32 result, float64 result), each computed once per process for these inputs."""
        return (self.ctx.reference_result(self.float32, *inputs),
                self.ctx.reference_result(self.float64, *(_float64(i) for i in inputs)))

    def judged(self, *inputs):
        """[(float32 output, float64 output, ``_bound`` of the two)] for each tensor the
        reference returns (one, or a pair), made once per process for these inputs and the
        course tolerance: the bounds are the reference's alone, and a long sequence's cost as
        much as comparing with them. The kept tensors themselves: only ``_expect_same``
        reads them, and it changes nothing."""
        tolerance = self.ctx.tolerance("float32")
        key = ("bounds", self.float32, self.float64, tolerance.atol, tolerance.rtol,
               fingerprint(inputs))

        def make():
            expected, exact = self(*inputs)
            pairs = zip(expected, exact) if isinstance(expected, tuple) else [(expected, exact)]
            return [(e, x, _bound(self.ctx, e, x)) for e, x in pairs]
        return self.ctx.once(key, make, copy=False)


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
    def prepare(c):
        batch = (c["b"], c["h"])
        q, k, v = drawn_once(ctx, c, (*batch, c["tq"], c["dk"]), (*batch, c["tk"], c["dk"]),
                             (*batch, c["tk"], c["dv"]))
        mask = _mask(ctx, c, c["b"], c["tq"], c["tk"])

        def judge(result, records):
            out, weights = ctx.pair(result, SDPA)
            (ref_out, exact_out, out_bound), (ref_weights, exact_weights, weights_bound) = \
                _sdpa_judged(ctx, q, k, v, mask)
            _expect_same(ctx, weights, ref_weights, WEIGHTS, exact_weights, weights_bound)
            _expect_same(ctx, out, ref_out, OUTPUT, exact_out, out_bound)
        return Probe(SDPA, (q, k, v), {} if mask is None else {"mask": mask}, judge)

    def show(c):
        return _shown(f"q {(c['b'], c['h'], c['tq'], c['dk'])}, k {(c['b'], c['h'], c['tk'], c['dk'])}, "
                      f"v {(c['b'], c['h'], c['tk'], c['dv'])}", _mask_words(c))

    search_sizes(ctx, targets.get(SDPA).sizes, prepare, show)
    _sdpa_any_leading_axes(ctx)  # after the search: the warm-up generates the search's sizes


LEADING_AXES = ((), (2, 1, 2))  # none at all, and three: the search itself draws (B, H)


def _sdpa_any_leading_axes(ctx):
    """The contract's q is (..., Tq, d_k): no leading axis and three work as (B, H) does (fixed
    axes such as ``k.transpose(2, 3)`` do not). Both in one request; inputs of a generator of
    their own, so that the search's draws stay as they were."""
    generator = torch.Generator().manual_seed(2026)
    inputs = [tuple(torch.randn(*lead, t, d, generator=generator) for t, d in ((3, 5), (4, 5), (4, 2)))
              for lead in LEADING_AXES]
    shapes = " / ".join(str(tuple(q.shape)) for q, _, _ in inputs)
    try:
        results = ctx.record_many([{"target": SDPA, "args": list(qkv)} for qkv in inputs])
    except ctx.StudentError as error:
        fail(bilingual(
            f"Gagal untuk q berbentuk {shapes} ({error.type}: {error.message[:200]}): q kontrak "
            "berbentuk (..., Tq, d_k), dengan sumbu di depan berapa pun, juga tanpa sumbu. Hitung "
            "sumbu dari belakang: `k.transpose(-2, -1)`, `softmax(dim=-1)`, `q.size(-1)`.",
            f"Fails for q of shape {shapes} ({error.type}: {error.message[:200]}): the contract's q "
            "is (..., Tq, d_k), with any number of leading axes, none included. Count axes from the "
            "end: `k.transpose(-2, -1)`, `softmax(dim=-1)`, `q.size(-1)`."))
    for (q, k, v), (result, _) in zip(inputs, results):
        out, weights = ctx.pair(result, SDPA)
        (ref_out, exact_out, out_bound), (ref_weights, exact_weights, weights_bound) = \
            _sdpa_judged(ctx, q, k, v, None)
        _expect_same(ctx, weights, ref_weights, WEIGHTS, exact_weights, weights_bound)
        _expect_same(ctx, out, ref_out, OUTPUT, exact_out, out_bound)


def _sdpa_judged(ctx, q, k, v, mask):
    """``_Reference.judged`` for the reference's scaled_dot_product_attention: [(float32,
    float64, bound)] for its output and its weights, made once per process for these inputs
    and the course tolerance (the grader's alone); only ``_expect_same`` reads them."""
    sdpa = ctx.reference.scaled_dot_product_attention
    tolerance = ctx.tolerance("float32")

    def make():
        expected = ctx.reference_result(sdpa, q, k, v, mask)
        exact = ctx.reference_result(sdpa, q.double(), k.double(), v.double(), mask)
        return [(e, x, _bound(ctx, e, x)) for e, x in zip(expected, exact)]
    key = ("bounds", sdpa, tolerance.atol, tolerance.rtol, fingerprint((q, k, v, mask)))
    return ctx.once(key, make, copy=False)


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
    module = _modules(ctx, MHA)

    def prepare(c):
        d = c["heads"] * c["dk"]
        obj, ref = module(d, c["heads"])
        q, k, v = drawn_once(ctx, c, (c["b"], c["tq"], d), (c["b"], c["tk"], d), (c["b"], c["tk"], d))
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
            (ref_out, exact_out, out_bound), (ref_weights, exact_weights, weights_bound) = \
                ref.judged(q, k, v, mask)
            _expect_same(ctx, out, ref_out, OUTPUT, exact_out, out_bound)
            _expect_same(ctx, weights, ref_weights, WEIGHTS, exact_weights, weights_bound)
        return Probe(obj, (q, k, v), {} if mask is None else {"mask": mask}, judge, functions=(SDPA,),
                     standins=sdpa_standin(ctx, c["heads"], q, k))

    def show(c):
        return _shown(f"MultiHeadAttention(d_model={c['heads'] * c['dk']}, num_heads={c['heads']}), "
                      f"B={c['b']}, Tq={c['tq']}, Tk={c['tk']}", _mask_words(c))

    search_sizes(ctx, targets.get(MHA).sizes, prepare, show,
                 _new_per_module(lambda c: (c["heads"], c["dk"])))


# -- positional_encoding ---------------------------------------------------------------------------
@check("pe.sizes", assignment="encoder", target=PE, category="hidden_config", points=1,
       needs=("pe.shape",), title=PE_TITLE,
       hint=_hint("length dan d_model (genap) berapa pun: jangan menyiapkan tabel dengan panjang "
                  "maksimum tetap.",
                  "Any length and any even d_model: do not precompute a table with a fixed maximum "
                  "length."))
def pe_sizes(ctx):
    def prepare(c):
        def judge(result, records):
            label = f"positional_encoding({c['length']}, {c['d_model']})"
            pe = ctx.tensor(result, label, shape=(c["length"], c["d_model"]))
            expected = ctx.reference_result(ctx.reference.positional_encoding, c["length"], c["d_model"])
            ctx.expect_close(pe.double(), expected.double(), bilingual("Nilainya", "Its values"),
                             "positional_encoding")
        return Probe(PE, (c["length"], c["d_model"]), {}, judge)

    search_sizes(ctx, targets.get(PE).sizes, prepare,
                 lambda c: f"length={c['length']}, d_model={c['d_model']}")


# -- FeedForward -------------------------------------------------------------------------------
@check("ffn.sizes", assignment="encoder", target=FFN, category="hidden_config", points=1,
       needs=("ffn.shape",), title=TITLE,
       hint=_hint("Pakai d_model dan d_ff dari argumen; FeedForward bekerja pada tiap token, "
                  "berapa pun B dan T.",
                  "Use d_model and d_ff from the arguments; FeedForward works on every token, "
                  "whatever B and T."))
def ffn_sizes(ctx):
    module = _modules(ctx, FFN)

    def prepare(c):
        obj, ref = module(c["d_model"], c["d_ff"])
        (x,) = drawn_once(ctx, c, (c["b"], c["t"], c["d_model"]), scale=2)

        def judge(result, records):
            [(expected, exact, bound)] = ref.judged(x)
            _expect_same(ctx, result, expected, OUTPUT, exact, bound)
        return Probe(obj, (x,), {}, judge)

    search_sizes(ctx, targets.get(FFN).sizes, prepare,
                 lambda c: f"FeedForward({c['d_model']}, {c['d_ff']}), x ({c['b']}, {c['t']}, {c['d_model']})",
                 _new_per_module(lambda c: (c["d_model"], c["d_ff"])))


# -- EncoderBlock ---------------------------------------------------------------------------------
@check("enc.sizes", assignment="encoder", target=ENC, category="hidden_config", points=1,
       needs=("enc.sensitivity",), title=TITLE,
       hint=_hint("Blok dinilai utuh (dengan sub-layer Anda sendiri), pre-LN dan post-LN, dengan "
                  "dan tanpa mask padding.",
                  "The block is graded whole (with your own sub-layers), pre-LN and post-LN, with and "
                  "without a padding mask."))
def enc_sizes(ctx):
    module = _modules(ctx, ENC)

    def prepare(c):
        d = c["heads"] * c["dk"]
        obj, ref = module(d, c["heads"], c["d_ff"], prenorm=c["prenorm"])
        (x,) = drawn_once(ctx, c, (c["b"], c["t"], d))
        mask = _padding(c["b"], c["t"], c["mask"])

        def judge(result, records):
            [(expected, exact, bound)] = ref.judged(x, mask)
            _expect_same(ctx, first_output(ctx, result, OUTPUT), expected, OUTPUT, exact, bound)
        return Probe(obj, (x,), {} if mask is None else {"mask": mask}, judge)

    def show(c):
        return _shown(f"EncoderBlock({c['heads'] * c['dk']}, {c['heads']}, {c['d_ff']}, "
                      f"prenorm={c['prenorm']}), x ({c['b']}, {c['t']}, {c['heads'] * c['dk']})",
                      _mask_words({"mask": c["mask"], "tk": c["t"]}))

    search_sizes(ctx, targets.get(ENC).sizes, prepare, show,
                 _new_per_module(lambda c: (c["heads"], c["dk"], c["d_ff"], c["prenorm"])))


# -- DecoderBlock ---------------------------------------------------------------------------------
@check("dec.sizes", assignment="decoder", target=DEC, category="hidden_config", points=1,
       needs=("dec.sensitivity",), title=TITLE,
       hint=_hint("Tdec dan Tsrc boleh berbeda (dan bernilai 1); mask kausal berukuran Tdec dari "
                  "masukan, berapa pun panjangnya.",
                  "Tdec and Tsrc may differ (and be 1); the causal mask has the input's Tdec, however "
                  "long."))
def dec_sizes(ctx):
    module = _modules(ctx, DEC)

    def prepare(c):
        d = c["heads"] * c["dk"]
        obj, ref = module(d, c["heads"], c["d_ff"])
        x, memory = drawn_once(ctx, c, (c["b"], c["tdec"], d), (c["b"], c["tsrc"], d))

        def judge(result, records):
            if not isinstance(result, (tuple, list)) or len(result) != 2:
                fail(bilingual("forward harus mengembalikan (keluaran, bobot cross-attention).",
                               "forward must return (output, cross-attention weights)."))
            (ref_out, exact_out, out_bound), (ref_weights, exact_weights, weights_bound) = \
                ref.judged(x, memory)
            _expect_same(ctx, result[0], ref_out, OUTPUT, exact_out, out_bound)
            _expect_same(ctx, result[1], ref_weights, bilingual("Bobot cross-attention",
                                                                "The cross-attention weights"),
                         exact_weights, weights_bound)
        return Probe(obj, (x, memory), {}, judge)

    def show(c):
        d = c["heads"] * c["dk"]
        return (f"DecoderBlock({d}, {c['heads']}, {c['d_ff']}), x ({c['b']}, {c['tdec']}, {d}), "
                f"memory ({c['b']}, {c['tsrc']}, {d})")

    search_sizes(ctx, targets.get(DEC).sizes, prepare, show,
                 _new_per_module(lambda c: (c["heads"], c["dk"], c["d_ff"])))
