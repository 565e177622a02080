"""The grader's own ``torch.optim.Adam``, without ``torch._dynamo``.

The reference training steps (``steps.Stepper``, the transformer's hidden variants) build and
step an Adam in the grader. Plain ``torch.optim`` imports all of ``torch._dynamo`` on the first
call of ``add_param_group`` (so in the constructor), ``zero_grad`` and ``step``: two to three
seconds of CPU in every grading process, for machinery that only matters while
``torch.compile`` traces, which the grader never does. There:

- ``add_param_group`` and ``zero_grad`` are ``torch._disable_dynamo(fn)``: on first call it
  imports dynamo to wrap ``fn`` in ``torch._dynamo.disable``, which outside tracing just calls
  ``fn``;
- ``step`` is ``_use_grad_for_differentiable(step)``, wrapped once more by
  ``Optimizer.profile_hook_step``: it imports dynamo for two ``graph_break()`` calls (no-ops
  outside tracing), sets the grad mode to ``defaults["differentiable"]``, and calls the
  optimizer's step hooks (the grader registers none) around ``step`` in a profiler range.

``adam`` gives each of its optimizers, as attributes of that one object, those methods'
undecorated functions: the same code on the same tensors, in the same grad mode, so every step
is bitwise the step of a plain Adam (``tests/test_eager_steps.py``); with a step hook
registered, ``step`` takes the plain path, hooks included. Nothing global changes:
other optimizers, and torch, are untouched. (A worker puts a stand-in ``torch._dynamo`` in
``sys.modules`` instead, ``worker._light_dynamo``: it serves one submission, on one thread; the
grader runs grading threads side by side, for the whole batch.) Where torch's decorators are
not the ones expected (another torch version), the method stays as it is: slower, the same
results.
"""

import types

import torch
from torch.optim import optimizer as optimizers  # torch.optim deletes the attribute; the module is there

# The decorators of torch.optim (torch 2.x) this module knows how to look through.
_DISABLE_DYNAMO = "_disable_dynamo.<locals>.inner"
_STEP_WRAPPERS = ("Optimizer.profile_hook_step.<locals>.wrapper",
                  "_use_grad_for_differentiable.<locals>._use_grad")


def adam(params, **options):
    """A ``torch.optim.Adam(params, **options)`` whose ``add_param_group``, ``zero_grad`` and
    ``step`` never import ``torch._dynamo``."""
    optimizer = torch.optim.Adam.__new__(torch.optim.Adam)
    for name in ("add_param_group", "zero_grad"):  # before __init__, which adds the group
        function = _undecorated(getattr(torch.optim.Adam, name), (_DISABLE_DYNAMO,))
        if function is not None:
            setattr(optimizer, name, types.MethodType(function, optimizer))
    step = _undecorated(torch.optim.Adam.step, _STEP_WRAPPERS)
    if step is not None:
        optimizer.step = types.MethodType(_eager_step(step), optimizer)
    optimizer.__init__(params, **options)
    return optimizer


def _undecorated(function, wrappers):
    """The function under ``function``'s decorators if each of them is one of ``wrappers``
    and there is at least one; else None. By their code's qualified name: ``functools.wraps``
    gives a wrapper the ``__qualname__`` of what it wraps."""
    seen = 0
    while _code_name(function) in wrappers and hasattr(function, "__wrapped__"):
        function, seen = function.__wrapped__, seen + 1
    if not seen or hasattr(function, "__wrapped__"):
        return None
    return function


def _code_name(function):
    return getattr(getattr(function, "__code__", None), "co_qualname", None)


def _eager_step(step):
    def eager_step(self, closure=None):
        if _hooks(self):  # nobody registers one in the grader; if one did, it would run
            return type(self).step(self, closure)  # the class's: hooked since __init__
        # what _use_grad does outside tracing (its graph breaks are no-ops there)
        with torch.set_grad_enabled(self.defaults["differentiable"]):
            return step(self, closure)
    return eager_step


def _hooks(optimizer):
    """Whether any step hook would run around ``optimizer``'s step (its own or a global one)."""
    return bool(getattr(optimizers, "_global_optimizer_pre_hooks", None)
                or getattr(optimizers, "_global_optimizer_post_hooks", None)
                or optimizer._optimizer_step_pre_hooks or optimizer._optimizer_step_post_hooks)
