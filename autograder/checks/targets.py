"""The contract's graded targets: one declaration each, beside the check registry.

A *target* is a function or an ``nn.Module`` class that students write (the contract,
``shared/spec/student-api.md``, names them). Everything the kit knows about a target that is
not a check is declared here, once:

- its name, kind and the assignment that grades it; the prefix of its check ids;
- its reference implementation (a dotted path into ``solutions``, or the object itself);
- the contract's calls (``Signature``), for ``*.present``;
- for a module: how to build it from a configuration (``arguments``), the sub-modules the
  contract names (``submodules``), the parameters it must hold (``parameters``), and the
  sub-layers whose calls the wiring checks record (``sublayers``);
- the targets it is built from (``parts``: a sub-layer's mistake is named once, at its root);
- the sizes its ``*.sizes`` check tries (``SizeSpace``).

Everything else reads these facts from here: the worker is asked to describe every declared
name (``names``), ``ctx.reference.<name>`` is the declared reference, the diagnosis engine walks
``parts``, the sizes checks take their search space, and ``checks.variants`` registers how the
reference computes with a mistake switched on per target. A new target (even one declared by a
test or a course's own module) is one ``declare(Target(...))`` call plus its checks.
"""

import importlib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable

FUNCTION, MODULE = "function", "module"
SDPA, CAUSAL, MHA = "scaled_dot_product_attention", "causal_mask", "MultiHeadAttention"
PE, FFN, ENC, DEC = "positional_encoding", "FeedForward", "EncoderBlock", "DecoderBlock"

LONG = (64, 128)  # a long sequence, as the sizes checks draw it
SHORT = (1, 12)


@dataclass(frozen=True)
class Signature:
    """The calls the grader makes: ``positional`` arguments by position and ``keywords`` by
    name (any other parameter must be optional); ``defaults``: keywords that must have a
    default. For a module the constructor's, then ``forward``'s. ``text`` is the contract's
    spelling, for messages."""

    text: str
    positional: int = 0
    keywords: tuple = ()
    forward_positional: int = 0
    forward_keywords: tuple = ()
    defaults: tuple = ()


@dataclass(frozen=True)
class SizeSpace:
    """The configurations a target's ``*.sizes`` check tries (see ``checks.search``).

    ``fields``: name -> smallest valid value, in the order a failure is shrunk (None: a field
    that is not shrunk, e.g. a flag); ``numbers``: the fields that are sizes, which never take
    a number of the course's hidden sizes (1 excepted); ``derived``: pairs whose product is a
    size too (d_model = heads * d_k); ``edges``: fixed configurations tried first;
    ``strategy(st)``: the Hypothesis strategy (``st`` is ``hypothesis.strategies``) of the
    generated ones, ``examples`` of them; ``step``: how far an edge's field moves past a hidden
    size; ``constraint``: any further rule of validity (an even d_model)."""

    fields: MappingProxyType
    numbers: tuple
    edges: tuple
    strategy: Callable
    examples: int
    derived: tuple = ()
    step: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    constraint: Callable | None = None


@dataclass(frozen=True)
class Target:
    name: str
    kind: str  # FUNCTION or MODULE
    assignment: str  # the assignment whose checks grade it
    prefix: str  # its check ids are "<prefix>.<what>"
    reference: object  # "package.module.Name", or the reference object itself
    signature: Signature
    arguments: Callable | None = None  # config.Sizes -> constructor arguments (modules)
    submodules: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    parameters: Callable | None = None  # constructor arguments -> {attribute path: shape}
    parts: tuple = ()  # targets it is built from, nearest first
    sublayers: tuple = ()  # attribute paths of the sub-layers the wiring checks record
    sizes: SizeSpace | None = None

    def implementation(self):
        """The reference function or class."""
        if not isinstance(self.reference, str):
            return self.reference
        module, _, name = self.reference.rpartition(".")
        return getattr(importlib.import_module(module), name)

    def contract_submodules(self):
        """{attribute: module type name, or None for any module}: a sub-layer that is itself a
        target may be any ``nn.Module`` (the student's class may be named otherwise)."""
        return {path: None if kind in TARGETS else kind for path, kind in self.submodules.items()}


TARGETS: dict = {}  # name -> Target, in declaration order


def declare(target):
    """Add a target to the table (a second declaration of a name replaces the first: a test
    may declare a toy target again). Returns it."""
    if target.kind not in (FUNCTION, MODULE):
        raise ValueError(f"{target.name}: kind must be {FUNCTION!r} or {MODULE!r}")
    if target.kind == MODULE and target.arguments is None:
        raise ValueError(f"{target.name}: a module target needs arguments(sizes)")
    TARGETS[target.name] = target
    return target


def get(name):
    return TARGETS[name]


def names():
    """Every declared target's name: what the worker is asked to describe."""
    return list(TARGETS)


def of_assignment(assignment):
    return [t for t in TARGETS.values() if t.assignment == assignment]


def parts_of(name):
    """Every target ``name`` is built from, nearest first."""
    found, level = [], list(TARGETS[name].parts) if name in TARGETS else []
    while level:
        found += [p for p in level if p not in found]
        level = [q for p in level for q in (TARGETS[p].parts if p in TARGETS else ())]
    return found


def users_of(name, among):
    """The targets of ``among`` built on ``name``."""
    return [t for t in among if name in parts_of(t)]


class References:
    """``ctx.reference``: every declared target's reference by its name (``ctx.reference.
    causal_mask(6)``), imported when first used."""

    def __getattr__(self, name):
        if name not in TARGETS:
            raise AttributeError(f"no declared target {name!r}")
        return TARGETS[name].implementation()


REFERENCES = References()


# -- the contract's shapes -----------------------------------------------------------------
def linear_shapes(d_in, d_out, name):
    return {f"{name}.weight": (d_out, d_in), f"{name}.bias": (d_out,)}


def mha_parameters(d_model, num_heads=None, prefix=""):
    """wq, wk, wv, wo: nn.Linear(d_model, d_model) with bias."""
    shapes = {}
    for name in ("wq", "wk", "wv", "wo"):
        shapes.update(linear_shapes(d_model, d_model, prefix + name))
    return shapes


def ffn_parameters(d_model, d_ff, prefix=""):
    """l1 = nn.Linear(d_model, d_ff), l2 = nn.Linear(d_ff, d_model)."""
    return {**linear_shapes(d_model, d_ff, prefix + "l1"), **linear_shapes(d_ff, d_model, prefix + "l2")}


def layernorm_parameters(d_model, *names):
    return {f"{n}.{p}": (d_model,) for n in names for p in ("weight", "bias")}


def encoder_parameters(d_model, num_heads, d_ff, prenorm=False):
    return {**mha_parameters(d_model, prefix="attn."), **ffn_parameters(d_model, d_ff, "ffn."),
            **layernorm_parameters(d_model, "ln1", "ln2")}


def decoder_parameters(d_model, num_heads, d_ff):
    return {**mha_parameters(d_model, prefix="self_attn."), **mha_parameters(d_model, prefix="cross_attn."),
            **ffn_parameters(d_model, d_ff, "ffn."), **layernorm_parameters(d_model, "ln1", "ln2", "ln3")}


# -- the sizes tried ---------------------------------------------------------------------------
def lengths(st):
    """A short or a long sequence."""
    return st.one_of(st.integers(*SHORT), st.integers(*LONG))


def _frozen(mapping):
    return MappingProxyType(dict(mapping))


# -- the table ---------------------------------------------------------------------------------
declare(Target(
    SDPA, FUNCTION, "attention", "sdpa", "solutions.attention.scaled_dot_product_attention",
    Signature("scaled_dot_product_attention(q, k, v, mask=None)", positional=3, keywords=("mask",),
              defaults=("mask",)),
    sizes=SizeSpace(
        fields=_frozen({"b": 1, "h": 1, "tq": 1, "tk": 1, "dk": 1, "dv": 1, "mask": "none"}),
        numbers=("b", "h", "tq", "tk", "dk", "dv"),
        edges=(dict(b=1, h=1, tq=1, tk=1, dk=1, dv=1, mask="none"),
               dict(b=1, h=2, tq=3, tk=5, dk=1, dv=2, mask="padding"),
               dict(b=2, h=1, tq=96, tk=96, dk=5, dv=3, mask="causal")),
        strategy=lambda st: st.fixed_dictionaries(dict(
            b=st.integers(1, 3), h=st.integers(1, 3), tq=lengths(st), tk=lengths(st),
            dk=st.integers(1, 9), dv=st.integers(1, 9),
            mask=st.sampled_from(("none", "padding", "causal")))),
        examples=8)))

declare(Target(
    CAUSAL, FUNCTION, "attention", "causal", "solutions.attention.causal_mask",
    Signature("causal_mask(t)", positional=1)))

declare(Target(
    MHA, MODULE, "attention", "mha", "solutions.attention.MultiHeadAttention",
    Signature("MultiHeadAttention(d_model, num_heads); forward(q, k, v, mask=None)", positional=2,
              forward_positional=3, forward_keywords=("mask",), defaults=("mask",)),
    arguments=lambda s: (s.d_model, s.num_heads),
    submodules=_frozen(dict.fromkeys(("wq", "wk", "wv", "wo"), "Linear")),
    parameters=mha_parameters, parts=(SDPA,),
    sizes=SizeSpace(
        fields=_frozen({"b": 1, "tq": 1, "tk": 1, "heads": 1, "dk": 1, "mask": "none"}),
        numbers=("b", "tq", "tk", "heads", "dk"), derived=(("heads", "dk"),),
        edges=(dict(b=1, tq=1, tk=2, heads=1, dk=6, mask="none"),
               dict(b=2, tq=5, tk=1, heads=5, dk=1, mask="none"),
               dict(b=1, tq=80, tk=80, heads=2, dk=5, mask="causal")),
        strategy=lambda st: st.fixed_dictionaries(dict(
            b=st.integers(1, 4), tq=lengths(st), tk=lengths(st), heads=st.integers(1, 6),
            dk=st.integers(1, 6), mask=st.sampled_from(("none", "padding", "causal")))),
        examples=2)))

declare(Target(
    PE, FUNCTION, "encoder", "pe", "solutions.encoder.positional_encoding",
    Signature("positional_encoding(length, d_model)", positional=2),
    sizes=SizeSpace(
        fields=_frozen({"length": 1, "d_model": 2}), numbers=("length", "d_model"),
        edges=(dict(length=1, d_model=2), dict(length=2, d_model=6), dict(length=128, d_model=10),
               dict(length=5, d_model=66)),
        strategy=lambda st: st.fixed_dictionaries(dict(
            length=lengths(st), d_model=st.integers(1, 40).map(lambda n: 2 * n))),
        examples=8, step=_frozen({"d_model": 2}), constraint=lambda c: c["d_model"] % 2 == 0)))

declare(Target(
    FFN, MODULE, "encoder", "ffn", "solutions.encoder.FeedForward",
    Signature("FeedForward(d_model, d_ff); forward(x)", positional=2, forward_positional=1),
    arguments=lambda s: (s.d_model, s.d_ff),
    submodules=_frozen({"l1": "Linear", "l2": "Linear"}), parameters=ffn_parameters,
    sizes=SizeSpace(
        fields=_frozen({"b": 1, "t": 1, "d_model": 1, "d_ff": 1}), numbers=("b", "t", "d_model", "d_ff"),
        edges=(dict(b=1, t=1, d_model=1, d_ff=1), dict(b=2, t=2, d_model=5, d_ff=2),
               dict(b=1, t=100, d_model=5, d_ff=2)),
        strategy=lambda st: st.fixed_dictionaries(dict(
            b=st.integers(1, 4), t=lengths(st), d_model=st.integers(1, 20), d_ff=st.integers(1, 40))),
        examples=2)))

declare(Target(
    ENC, MODULE, "encoder", "enc", "solutions.encoder.EncoderBlock",
    Signature("EncoderBlock(d_model, num_heads, d_ff, prenorm=False); forward(x, mask=None)",
              positional=3, keywords=("prenorm",), forward_positional=1, forward_keywords=("mask",),
              defaults=("prenorm", "mask")),
    arguments=lambda s: (s.d_model, s.num_heads, s.d_ff),
    submodules=_frozen({"attn": MHA, "ffn": FFN, "ln1": "LayerNorm", "ln2": "LayerNorm"}),
    parameters=encoder_parameters, parts=(MHA, FFN), sublayers=("attn", "ffn"),
    sizes=SizeSpace(
        fields=_frozen({"b": 1, "t": 1, "heads": 1, "dk": 1, "d_ff": 1, "prenorm": None, "mask": "none"}),
        numbers=("b", "t", "heads", "dk", "d_ff"), derived=(("heads", "dk"),),
        edges=(dict(b=1, t=1, heads=1, dk=5, d_ff=2, prenorm=False, mask="none"),
               dict(b=2, t=6, heads=2, dk=1, d_ff=5, prenorm=True, mask="padding"),
               dict(b=1, t=70, heads=2, dk=5, d_ff=6, prenorm=False, mask="none")),
        strategy=lambda st: st.fixed_dictionaries(dict(
            b=st.integers(1, 4), t=lengths(st), heads=st.integers(1, 5), dk=st.integers(1, 5),
            d_ff=st.integers(1, 24), prenorm=st.booleans(), mask=st.sampled_from(("none", "padding")))),
        examples=2)))

declare(Target(
    DEC, MODULE, "decoder", "dec", "solutions.decoder.DecoderBlock",
    Signature("DecoderBlock(d_model, num_heads, d_ff); forward(x, memory)", positional=3,
              forward_positional=2),
    arguments=lambda s: (s.d_model, s.num_heads, s.d_ff),
    submodules=_frozen({"self_attn": MHA, "cross_attn": MHA, "ffn": FFN, "ln1": "LayerNorm",
                        "ln2": "LayerNorm", "ln3": "LayerNorm"}),
    parameters=decoder_parameters, parts=(MHA, FFN, CAUSAL),
    sublayers=("self_attn", "cross_attn", "ffn"),
    sizes=SizeSpace(
        fields=_frozen({"b": 1, "tdec": 1, "tsrc": 1, "heads": 1, "dk": 1, "d_ff": 1}),
        numbers=("b", "tdec", "tsrc", "heads", "dk", "d_ff"), derived=(("heads", "dk"),),
        edges=(dict(b=1, tdec=1, tsrc=2, heads=1, dk=5, d_ff=2),
               dict(b=2, tdec=5, tsrc=1, heads=2, dk=1, d_ff=5),
               dict(b=1, tdec=70, tsrc=9, heads=2, dk=5, d_ff=6),
               # Tdec = Tsrc: a square mask then fits the cross-attention too (the course's sizes
               # keep the two lengths apart, and independent draws rarely make them equal)
               dict(b=2, tdec=4, tsrc=4, heads=2, dk=3, d_ff=4)),
        strategy=lambda st: st.fixed_dictionaries(dict(
            b=st.integers(1, 4), tdec=lengths(st), tsrc=lengths(st), heads=st.integers(1, 5),
            dk=st.integers(1, 5), d_ff=st.integers(1, 24))),
        examples=2)))

# -- assignment 4: the whole Transformer ---------------------------------------------------
SHIFT, TRANSFORMER, TRAIN, GREEDY = "shift_right", "Transformer", "train_step", "greedy_decode"
SRC_VOCAB, TGT_VOCAB, LAYERS, MAX_LEN = 10, 11, 2, 32  # the notebook's task and depth


def transformer_arguments(sizes, src_vocab=SRC_VOCAB, tgt_vocab=TGT_VOCAB, num_layers=LAYERS,
                          max_len=MAX_LEN):
    """Transformer(src_vocab, tgt_vocab, d_model, num_heads, d_ff, num_layers, max_len)."""
    return (src_vocab, tgt_vocab, sizes.d_model, sizes.num_heads, sizes.d_ff, num_layers, max_len)


def transformer_parameters(src_vocab, tgt_vocab, d_model, num_heads, d_ff, num_layers, max_len=None,
                           prenorm=True):
    """Embeddings, num_layers distinct encoder and decoder blocks, two final norms, the generator."""
    shapes = {"src_embed.weight": (src_vocab, d_model), "tgt_embed.weight": (tgt_vocab, d_model)}
    for i in range(num_layers):
        shapes.update({f"encoder.{i}.{p}": s for p, s in encoder_parameters(d_model, num_heads, d_ff).items()})
    for i in range(num_layers):
        shapes.update({f"decoder.{i}.{p}": s for p, s in decoder_parameters(d_model, num_heads, d_ff).items()})
    return {**shapes, **layernorm_parameters(d_model, "enc_norm", "dec_norm"),
            **linear_shapes(d_model, tgt_vocab, "generator")}


declare(Target(
    SHIFT, FUNCTION, "transformer", "shift", "solutions.transformer.shift_right",
    Signature("shift_right(y, bos)", positional=2)))

declare(Target(
    TRANSFORMER, MODULE, "transformer", "tf", "solutions.transformer.Transformer",
    Signature("Transformer(src_vocab, tgt_vocab, d_model, num_heads, d_ff, num_layers, max_len, "
              "prenorm=True); forward(src, tgt)", positional=7, keywords=("prenorm",),
              forward_positional=2, defaults=("prenorm",)),
    arguments=transformer_arguments,
    submodules=_frozen({"src_embed": "Embedding", "tgt_embed": "Embedding", "encoder": "ModuleList",
                        "decoder": "ModuleList", "enc_norm": "LayerNorm", "dec_norm": "LayerNorm",
                        "generator": "Linear"}),
    parameters=transformer_parameters, parts=(ENC, DEC),
    sublayers=tuple(f"{side}.{i}" for side in ("encoder", "decoder") for i in range(LAYERS))))

declare(Target(
    TRAIN, FUNCTION, "transformer", "train", "solutions.transformer.train_step",
    Signature("train_step(model, optimizer, src, tgt_in, tgt_out)", positional=5)))

declare(Target(
    GREEDY, FUNCTION, "transformer", "greedy", "solutions.transformer.greedy_decode",
    Signature("greedy_decode(model, src, bos, max_len)", positional=4)))
