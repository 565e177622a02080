"""The ``meta`` device in the sandbox's workers: fast, warm, and without importing the
compiler's machinery that nothing here uses (standard library and torch only; loaded by the
zygote as a plain script, as ``worker.py`` is).

The device checks run a student's block on ``meta`` (shapes only). On that device torch runs
many ops through Python code that, left alone, first imports two large libraries only to
handle symbolic shapes and tracing, which nothing here does: ``torch._dynamo`` (about a
second of CPU) and, through ``torch._check``, ``torch.fx.experimental.symbolic_shapes`` with
sympy (about half a second). The zygote imports neither; its workers inherit that.

- ``lazy_imports``: stand-ins for sympy and ``symbolic_shapes`` that answer the few questions torch
  asks of them outside tracing as the real ones do, and import the real module as soon
  as anything else is asked of it (a student's ``torch.compile``, say);
- ``native_meta_kernels``: ops with a C++ meta kernel use it again;
- ``warm_up_meta``: the ops a block runs, once on ``meta``, with a stand-in for
  ``torch._dynamo`` while it lasts.
"""

import functools
import importlib
import importlib.util
import inspect
import operator
import sys
import types

import torch

SYMBOLIC_SHAPES = "torch.fx.experimental.symbolic_shapes"


class _Lazy(types.ModuleType):
    """A module that imports the real one (named as it is) the first time something is asked
    of it that it cannot answer exactly as the real one would; from then on, it hands every
    question to the real one. Before that, no object of the real module exists anywhere."""

    def __init__(self, spec):
        super().__init__(spec.name)
        self.__spec__, self.__loader__ = spec, spec.loader
        self.__file__, self.__package__ = spec.origin, spec.parent
        self._real = None

    def _load(self):
        if self._real is None:
            if sys.modules.get(self.__name__) is self:
                del sys.modules[self.__name__]
            try:
                self._real = importlib.import_module(self.__name__)
            except BaseException:
                sys.modules.setdefault(self.__name__, self)
                raise
        return self._real

    def __getattr__(self, name):
        if name == "__path__" and self.__spec__.submodule_search_locations is None:
            raise AttributeError(name)  # asked by every ``from ... import``: not a package
        return getattr(self._load(), name)

    @classmethod
    def install(cls):
        """Put a stand-in where the module is looked up (``sys.modules``, and its package's
        attribute); nothing changes where the real one is imported already or cannot be
        found. Returns the stand-in, or None."""
        parent, _, child = cls.NAME.rpartition(".")
        package = sys.modules.get(parent) if parent else None
        if cls.NAME in sys.modules or (parent and (package is None or hasattr(package, child))):
            return None
        spec = importlib.util.find_spec(cls.NAME)
        if spec is None:
            return None
        stand_in = cls(spec)
        sys.modules[cls.NAME] = stand_in
        if package is not None:
            setattr(package, child, stand_in)
        return stand_in


class _NoInstances:
    """A class nothing is an instance of: what ``isinstance(x, sympy.Basic)`` tests while
    sympy is not imported, when no sympy object can exist."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("a stand-in class")


class _LazySympy(_Lazy):
    """``sympy`` (about half a second to import) until something other than torch's type
    promotion asks for it. ``elementwise_dtypes`` (every elementwise op that runs through
    torch's Python references, as many do on ``meta``) imports sympy only to test whether an
    argument is a ``sympy.Basic``; there, and only there, ``Basic`` is a class without
    instances while the real sympy is not imported."""

    NAME = "sympy"

    def __getattr__(self, name):
        if name == "Basic" and self._real is None and sys._getframe(1).f_code in _TYPE_PROMOTION:
            return _NoInstances
        return super().__getattr__(name)


class _LazySymbolicShapes(_Lazy):
    """``torch.fx.experimental.symbolic_shapes`` (it imports sympy) until something needs
    more than the answers below: torch's ``torch._check``, its broadcasting and its
    shape checks import a few of its functions and, outside tracing, call them with plain
    values only.

    Each function below answers only where every argument is a plain ``bool``/``int`` (or a
    tuple or list of ints), as the real one does for those (torch 2.13's code, read line by
    line, and ``tests/test_meta_device.py``); any other argument goes to the real function.
    The names in ``DEFERRED`` are functions imported on those paths but called only on
    symbolic values: they import the real module when called. Every other name imports it."""

    NAME = SYMBOLIC_SHAPES
    DEFERRED = ("guarding_hint_or_throw", "has_guarding_hint", "guard_size_oblivious", "guard_bool",
                "free_symbols", "free_unbacked_symbols")

    def __getattr__(self, name):
        if name in self.DEFERRED and self._real is None:
            return functools.partial(self._deferred, name)
        return super().__getattr__(name)

    def _deferred(self, name, *args, **kwargs):
        return getattr(self._load(), name)(*args, **kwargs)

    # torch 2.13: `if type(a) is not bool: raise ...; return a` past the SymBool case
    def expect_true(self, a, skip=0):
        return a if type(a) is bool else self._load().expect_true(a, skip + 1)

    def guard_or_false(self, a):
        return a if type(a) is bool else self._load().guard_or_false(a)

    def guard_or_true(self, a):
        return a if type(a) is bool else self._load().guard_or_true(a)

    def statically_known_true(self, x):
        return x if type(x) is bool else self._load().statically_known_true(x)

    def is_nested_int(self, s):  # `isinstance(s, torch.SymInt) and s.node.is_nested_int()`
        return False if not isinstance(s, torch.SymInt) else self._load().is_nested_int(s)

    def sym_and(self, x, *others):
        if type(x) is bool and all(type(y) is bool for y in others):
            return functools.reduce(operator.and_, others, x)
        return self._load().sym_and(x, *others)

    def sym_or(self, x, *others):
        if type(x) is bool and all(type(y) is bool for y in others):
            return functools.reduce(operator.or_, others, x)
        return self._load().sym_or(x, *others)

    def sym_eq(self, x, y):
        if isinstance(x, (tuple, list)) and isinstance(y, (tuple, list)) \
                and all(type(n) in (int, bool) for n in (*x, *y)):
            return len(x) == len(y) and functools.reduce(operator.and_, map(operator.eq, x, y), True)
        if type(x) in (int, bool) and type(y) in (int, bool):
            return x == y
        return self._load().sym_eq(x, y)


def _type_promotion_code():
    try:
        import torch._prims_common as prims_common

        return frozenset({inspect.unwrap(prims_common.elementwise_dtypes).__code__})
    except (ImportError, AttributeError):
        return frozenset()


_TYPE_PROMOTION = frozenset()


def lazy_imports():
    """Stand-ins for sympy and ``symbolic_shapes`` (see their classes), which torch imports
    on first use only to handle symbolic shapes. Returns the stand-ins installed."""
    global _TYPE_PROMOTION
    _TYPE_PROMOTION = _type_promotion_code()
    return [m for m in (_LazySympy.install(), _LazySymbolicShapes.install()) if m is not None]


def native_meta_kernels():
    """Let ops that have a C++ kernel for the ``meta`` device use it again.

    At import, torch registers a Python meta function (a decomposition, made for tracing with
    symbolic shapes) for some 1,300 aten ops, over the C++ meta kernel where there is one: a
    block's forward on ``meta`` (the device checks) then costs ~4 ms instead of ~0.4 ms. Here
    that registration is undone and redone only for the ops without a C++ meta kernel. Shapes,
    dtypes and errors on ``meta`` are the C++ kernels' own, as in eager PyTorch before those
    registrations existed. Where torch's internals are not as expected, nothing changes."""
    try:
        import torch._meta_registrations as registrations
        from torch._decomp import global_decomposition_table

        library = registrations._meta_lib_dont_use_me_use_register_meta
        registered = set(library._op_impls)
        functions = {}
        for kind in ("meta", "post_autograd", "pre_autograd"):  # torch's own order of precedence
            for op, function in global_decomposition_table[kind].items():
                functions.setdefault(op, function)
        keep = {op: function for op, function in functions.items()
                if isinstance(op, torch._ops.OpOverload)
                and f"aten/{op.name().split('::')[-1]}/Meta" in registered}
        if len(keep) != len(registered):
            return  # registrations made some other way: leave them all
    except (ImportError, AttributeError, TypeError):
        return
    library._destroy()
    replacement = torch.library.Library("aten", "IMPL", "Meta")
    for op, function in keep.items():
        if not torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "Meta"):
            replacement.impl(op, function)
    registrations._meta_lib_dont_use_me_use_register_meta = replacement


class _DynamoStandIn(types.ModuleType):
    """``torch._dynamo`` while the zygote warms up the meta device.

    Most ops on ``meta`` (the device checks) run Python decompositions wrapped in
    ``torch._compile._disable_dynamo``, which imports all of ``torch._dynamo`` (about a
    second of CPU) on its first call and then caches ``torch._dynamo.disable(fn)`` on the
    function. Disabling dynamo only matters while dynamo traces, which nothing here does: with
    this stand-in the cache holds the function itself and dynamo is never imported. An op
    first met later, in a worker, imports the real one (slower, the same results)."""

    def __init__(self):
        super().__init__("torch._dynamo")
        self.disable = lambda fn, recursive=True, wrapping=True: fn
        self.is_compiling = lambda: False


def warm_up_meta():
    """The ops a block runs, once on ``meta`` (see ``_DynamoStandIn``; not needed where the
    real ``torch._dynamo`` is imported already); if anything about the stand-in fails, the
    same ops with the real one."""
    if "torch._dynamo" not in sys.modules and "_dynamo" not in vars(torch):
        sys.modules["torch._dynamo"] = torch._dynamo = _DynamoStandIn()
        try:
            _meta_ops()
            return
        except Exception:
            pass
        finally:
            del sys.modules["torch._dynamo"], torch._dynamo
    try:
        _meta_ops()
    except Exception:  # a warm-up only: workers then do this work themselves
        pass


def _meta_ops():
    F = torch.nn.functional
    meta = torch.device("meta")
    x, y = torch.randn(2, 3, 5, 8, device=meta), torch.randn(2, 5, 8, device=meta)
    w, b = torch.randn(8, 8, device=meta), torch.randn(8, device=meta)
    m = torch.ones(5, 5, dtype=torch.bool, device=meta).triu(1)
    s = (x @ x.transpose(-2, -1)) / 8 ** 0.5
    s = s.masked_fill(m, float("-inf")).masked_fill(~m, -1e9)
    torch.where(m, s, torch.zeros((), device=meta))
    s.softmax(-1), F.softmax(s, dim=-1, dtype=torch.float64), s.log_softmax(-1)
    torch.exp(s - s.amax(-1, keepdim=True)).sum(-1, keepdim=True)
    F.linear(y, w, b), F.linear(y, w), torch.einsum("bhqd,bhkd->bhqk", x, x)
    torch.bmm(y, y.transpose(1, 2)), torch.matmul(y, w), torch.baddbmm(y @ y.transpose(1, 2), y, y.transpose(1, 2))
    F.layer_norm(y, (8,), b, b), F.layer_norm(y, (8,)), y.var(-1, keepdim=True, unbiased=False), y.std(-1)
    (y - y.mean(-1, keepdim=True)) / torch.sqrt(y.var(-1, keepdim=True) + 1e-5)
    F.gelu(y), F.gelu(y, approximate="tanh"), F.relu(y), torch.tanh(y), torch.sigmoid(y), torch.erf(y)
    F.dropout(y, 0.1, False), F.silu(y)
    y.view(2, 5, 2, 4).transpose(1, 2).contiguous().view(2, 2, 20)
    y.reshape(2, 5, 2, 4).permute(0, 2, 1, 3).flatten(2), y.unflatten(-1, (2, 4))
    torch.cat([y, y], -1).split(8, -1), torch.stack([y, y]).chunk(2), y.unbind(1)
    y.unsqueeze(1).expand(2, 3, 5, 8).repeat(1, 1, 1, 1).squeeze(0)
    (y + y - y * y / y).pow(2).rsqrt().clamp(min=0), y ** 0.5, y.sqrt(), abs(y), -y
    y.max(-1), y.mean(), y.sum(), y.norm(dim=-1), y.argmax(-1), y.masked_fill(y > 0, 0.0)
    torch.arange(5, device=meta), torch.arange(0, 8, 2, device=meta).float() / 8
    torch.ones(5, 5, device=meta).tril(), torch.zeros(5, device=meta), torch.full((5,), 2.0, device=meta)
    torch.arange(5, device=meta)[:, None] > torch.arange(5, device=meta), m == 0, m.logical_not(), m | m, m & m
    torch.sin(y), torch.cos(y), torch.log(y), torch.exp(y), y.double(), y.float(), y.to(torch.float64), y.type_as(y)
    y.new_ones(3), y.new_zeros(3), torch.ones_like(y), torch.zeros_like(y), torch.empty_like(y), y.clone()
    F.scaled_dot_product_attention(x, x, x), F.scaled_dot_product_attention(x, x, x, attn_mask=~m)
    F.scaled_dot_product_attention(x, x, x, is_causal=True)
    torch.nn.Linear(8, 8, device=meta)(y), torch.nn.LayerNorm(8, device=meta)(y), torch.nn.Dropout(0.1).eval()(y)
    torch.nn.MultiheadAttention(8, 2, batch_first=True, device=meta)(y, y, y, attn_mask=m)
    with torch.no_grad():
        F.layer_norm(y.double(), (8,)), F.gelu(y.double()), F.linear(y.double(), w.double())
    z = torch.randn(2, 5, 8, device=meta, requires_grad=True)
    (F.layer_norm(F.gelu(F.linear(z, w, b)), (8,)).softmax(-1) * 2).sum().backward()


