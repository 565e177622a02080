"""Verdicts and hints that more than one check module uses, for any target (all decided in the
trusted process): the contract's names and parameters, gradients, batch independence, inputs
left as they were, devices, float64, masks, and the gate's rules. Check modules import from
here, never from each other; what only the attention checks share is in ``attention_calls``."""

import math

import torch

from autograder.checks import targets
from autograder.checks.registry import GATE_SHARE, OUTPUT, fail, label
from autograder.sandbox.wire import RemoteTensor
from autograder.texts import bilingual


def expect_present(ctx, name):
    """The target ``name`` exists, is a function / an nn.Module class as declared
    (``targets.Target``), and accepts the contract's calls (``targets.Signature``): its
    positional arguments by position and its keywords by name (the grader passes nothing else
    by name, so other parameter names are the student's choice); any further parameter must
    be optional."""
    target = targets.get(name)
    kind, sig = target.kind, target.signature
    info = ctx.session.load_info["names"].get(name, {"kind": "missing"})
    if info["kind"] == "missing":
        fail(bilingual(f"`{name}` tidak ditemukan. Pastikan sel yang mendefinisikannya berjalan tanpa "
                       "error dan namanya ditulis persis.",
                       f"`{name}` was not found. Make sure the cell that defines it runs without "
                       "errors and that the name is spelled exactly."))
    if name in ctx.stubs:
        fail(bilingual(f"`{name}` masih berisi stub tugas (`raise NotImplementedError`): lengkapi "
                       "bagian yang ditandai.",
                       f"`{name}` is still the assignment's stub (`raise NotImplementedError`): fill "
                       "in the marked part."))
    if kind == "function" and info["kind"] != "function":
        fail(bilingual(f"`{name}` harus berupa fungsi.", f"`{name}` must be a function."))
    if kind == "module" and (info["kind"] != "class" or not info.get("is_module")):
        fail(bilingual(f"`{name}` harus berupa kelas turunan torch.nn.Module.",
                       f"`{name}` must be a class derived from torch.nn.Module."))
    calls = [(info.get("parameters"), sig.positional, sig.keywords, "")]
    if kind == "module":
        calls.append((info.get("forward"), sig.forward_positional, sig.forward_keywords, ".forward"))
    for declared, count, names, suffix in calls:
        if declared is not None and not _accepts(declared, count, names, sig.defaults):
            found = ", ".join(p["name"] for p in declared)
            fail(bilingual(f"Daftar parameter `{name}{suffix}({found})` tidak cocok dengan kontrak: {sig.text}.",
                           f"`{name}{suffix}({found})` does not match the contract: {sig.text}."))


def _accepts(declared, count, keywords, defaults):
    kinds = {p["kind"] for p in declared}
    positional = [p for p in declared if p["kind"] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
    by_name = {p["name"]: p for p in declared if p["kind"] != "POSITIONAL_ONLY"}
    if len(positional) < count and "VAR_POSITIONAL" not in kinds:
        return False
    for keyword in keywords:
        if keyword not in by_name and "VAR_KEYWORD" not in kinds:
            return False
        if keyword in defaults and keyword in by_name and not by_name[keyword]["default"]:
            return False
    rest = positional[count:] + [p for p in declared if p["kind"] == "KEYWORD_ONLY"]
    return all(p["default"] or p["name"] in keywords and p["name"] not in defaults for p in rest)


def expect_submodules(obj, required=None):
    """The contract's sub-modules exist under their attribute names; ``required`` maps each
    name to the module type it must be (e.g. "Linear"), or to None for any module; by default
    those of the target ``obj`` was built from (``Target.contract_submodules``)."""
    if required is None:
        required = targets.get(obj.name).contract_submodules()
    missing = [name if kind is None else f"{name} (nn.{kind})" for name, kind in required.items()
               if name not in obj.modules or kind is not None and obj.modules[name] != kind]
    if missing:
        fail(bilingual(f"Sub-modul berikut tidak ditemukan: {', '.join(missing)}.",
                       f"These sub-modules are missing: {', '.join(missing)}."))


def expect_param_count(ctx, obj, expected_shapes, label):
    """Parameter paths and shapes match the contract, then the total."""
    total = sum(_numel(shape) for shape in obj.params.values())
    expected_total = sum(_numel(shape) for shape in expected_shapes.values())
    for path, shape in expected_shapes.items():
        if path not in obj.aliases:
            fail(bilingual(f"{label}: parameter `{path}` tidak ada (total {total} parameter).",
                           f"{label}: parameter `{path}` is missing ({total} parameters in total)."))
        if obj.aliases[path] != tuple(shape):
            fail(bilingual(f"{label}: `{path}` berbentuk {obj.aliases[path]}, seharusnya {tuple(shape)}.",
                           f"{label}: `{path}` has shape {obj.aliases[path]}, expected {tuple(shape)}."))
    if total != expected_total:
        shared = bilingual(" Ada parameter yang dipakai bersama (mis. satu LayerNorm untuk dua tempat)?",
                           " Is a parameter shared (e.g. one LayerNorm used in two places)?") \
            if total < expected_total and len(obj.aliases) > len(obj.params) else bilingual("", "")
        fail(bilingual(f"{label}: {total} parameter, seharusnya {expected_total}.{shared['id']}",
                       f"{label}: {total} parameters, expected {expected_total}.{shared['en']}"))


def _numel(shape):
    count = 1
    for n in shape:
        count *= n
    return count


def first_output(ctx, result, what):
    """The main output of a forward that returns either a tensor or (tensor, weights)."""
    if isinstance(result, (tuple, list)) and result:
        result = result[0]
    return ctx.tensor(result, what)


def _is_tensor(value):
    return isinstance(value, torch.Tensor)


def expect_gradient_flow(ctx, target, args, cotangent, kwargs=None, inputs=()):
    """Every parameter receives a gradient from the output, and the gradient reaching each
    listed input is the one the function's own math implies: autograd agrees with a central
    finite difference of <cotangent, output> (a non-zero but cut or wrong gradient does not
    pass). Independent of the values' agreement with the reference, so a numeric bug is not
    charged here."""
    param_grads, input_grads = ctx.session.grad(target, cotangent, *args, **(kwargs or {}))
    dead = [path for path, g in param_grads.items() if not _is_tensor(g)]
    dead += [f"input {i + 1}" for i in inputs if i >= len(input_grads) or not _is_tensor(input_grads[i])]
    if dead:
        fail(bilingual(f"Gradien tidak sampai ke: {', '.join(dead[:6])}. Apakah forward memakainya? Cari "
                       "juga `.detach()`, `torch.no_grad()`, `.data` atau tensor yang dibuat ulang di forward.",
                       f"No gradient reaches: {', '.join(dead[:6])}. Does forward use it? Look also for "
                       "`.detach()`, `torch.no_grad()`, `.data` or tensors rebuilt inside forward."))
    grads = [g for g in (*param_grads.values(), *input_grads) if _is_tensor(g)]
    if not all(bool(torch.isfinite(g).all()) for g in grads):
        fail(bilingual("Gradien berisi NaN atau inf (sering karena satu baris attention diblokir seluruhnya).",
                       "Gradients contain NaN or inf (often because a whole attention row is blocked)."))
    if _changes_its_inputs(ctx, target, args, kwargs or {}):
        return  # finite differences mean nothing then; the no_inplace check names that bug
    wrong = [i for i in _inconsistent_inputs(ctx, target, args, kwargs or {}, cotangent, input_grads)
             if i in inputs]
    if wrong:
        fail(bilingual(f"Gradien untuk masukan ke-{wrong[0] + 1} tidak sesuai dengan perubahan keluaran "
                       "yang sebenarnya: sebagian perhitungan terputus dari graf komputasi "
                       "(`.detach()`, `.data`, `torch.no_grad()`).",
                       f"The gradient reaching input number {wrong[0] + 1} does not match how the "
                       "output really changes: part of the computation is cut from the computation "
                       "graph (`.detach()`, `.data`, `torch.no_grad()`)."))


def expect_gradients_consistent(ctx, obj, args, cotangent, sublayers=()):
    """The gradient that autograd delivers to each input equals how the output really changes
    (a central finite difference). Independent of the wiring's numbers, so a wiring bug is not
    penalised twice; a graph cut (``no_grad``, ``.detach()``, ``.data``) anywhere makes them
    disagree. The block's own parameters must get gradients too. The block runs with its own
    sub-layers, recorded (``sublayers``: attribute paths): one called under ``no_grad`` or on
    detached inputs is named; a cut *inside* a sub-layer (it disagrees with its own finite
    differences, or leaves its own parameters without gradient when run alone) is that
    sub-layer's bug, graded by its own checks, not this one."""
    param_grads, input_grads, records = ctx.grad_recording(obj, cotangent, args, modules=sublayers)
    cut = sorted({c.names[0] for c in records.calls if not (c.grad["enabled"] and c.grad["inputs"])})
    if cut:
        fail(bilingual(f"Sub-layer {', '.join(cut)} dipanggil tanpa gradien (di dalam "
                       "`torch.no_grad()` atau dengan masukan yang di-`detach()`): sub-layer itu tidak "
                       "akan pernah belajar.",
                       f"The sub-layer(s) {', '.join(cut)} are called without gradients (inside "
                       "`torch.no_grad()` or on detached inputs): they would never learn."))

    explained = []

    def cut_inside_a_sublayer():
        """A recorded sub-layer run again on its own leaves some of its parameters without
        gradient, or its input gradients disagree with finite differences: its own bug (its
        gradient check says so), which explains what the block's gradients show."""
        if not explained:
            explained.append(any(_sublayer_cuts_itself(ctx, obj, path, records.of(path)[0])
                                 for path in sublayers if records.of(path)))
        return explained[0]

    dead = [path for path, g in param_grads.items() if not _is_tensor(g)]
    if dead and not cut_inside_a_sublayer():
        fail(bilingual(f"Gradien tidak sampai ke: {', '.join(dead[:6])}. Apakah forward blok memakainya "
                       "(mis. satu LayerNorm dipanggil dua kali, padahal yang lain dimaksud)? Cari juga "
                       "`.detach()`, `torch.no_grad()` atau `.data` di forward blok.",
                       f"No gradient reaches: {', '.join(dead[:6])}. Does the block's forward use it (e.g. "
                       "one LayerNorm called twice where the other is meant)? Look also for `.detach()`, "
                       "`torch.no_grad()` or `.data` in the block's forward."))
    if dead:
        return
    for index in _inconsistent_inputs(ctx, obj, args, {}, cotangent, input_grads):
        if cut_inside_a_sublayer():
            return
        fail(bilingual(f"Gradien untuk masukan ke-{index + 1} tidak sesuai dengan perubahan keluaran "
                       "yang sebenarnya: sebagian forward terputus dari graf komputasi "
                       "(`torch.no_grad()`, `.detach()`, `.data`).",
                       f"The gradient reaching input number {index + 1} does not match how the "
                       "output really changes: part of forward is cut from the computation graph "
                       "(`torch.no_grad()`, `.detach()`, `.data`)."))


def _changes_its_inputs(ctx, target, args, kwargs):
    _, after = ctx.session.call_returning_inputs(target, *args, **kwargs)
    return any(_is_tensor(before) and not (_is_tensor(now) and now.shape == before.shape
                                           and torch.equal(now, before))
               for before, now in zip(args, after))


def _inconsistent_inputs(ctx, target, args, kwargs, cotangent, input_grads):
    """Indices of the tensor arguments whose autograd gradient disagrees with a central
    finite difference of <cotangent, first output> (every perturbed call in one request)."""
    # float32 (a dtype bug is the dtype check's business); the step and the tolerance are
    # sized for float32 rounding, and a cut graph is off by far more than that.
    step = 1e-2
    perturbed = []  # (index, direction, plus, minus)
    for index, value in enumerate(args):
        if _is_tensor(value) and value.is_floating_point():
            direction = ctx.randn(*value.shape, dtype=value.dtype)
            plus, minus = list(args), list(args)
            plus[index], minus[index] = value + step * direction, value - step * direction
            perturbed.append((index, direction, plus, minus))
    runs = [{"target": target, "args": values, "kwargs": kwargs}
            for _, _, plus, minus in perturbed for values in (plus, minus)]
    losses = [float((first_output(ctx, result, OUTPUT).double() * cotangent).sum())
              for result, _ in ctx.record_many(runs)]
    for (index, direction, _, _), up, down in zip(perturbed, losses[0::2], losses[1::2]):
        expected = (up - down) / (2 * step)
        grad = input_grads[index] if index < len(input_grads) else None
        got = float((grad.double() * direction).sum()) if _is_tensor(grad) else 0.0
        if not abs(got - expected) <= 2e-2 + 2e-2 * abs(expected):
            yield index


def _sublayer_cuts_itself(ctx, obj, path, call):
    """Run one recorded sub-layer call again on its own: does it leave a parameter without
    gradient, or disagree with its own finite differences?"""
    main = call.main
    if not _is_tensor(main) or not main.is_floating_point() or call.replaced:
        return False
    target = obj.sub(path)
    cotangent = ctx.randn(*main.shape, dtype=main.dtype)
    params, inputs = ctx.session.grad(target, cotangent, *call.args, **call.kwargs)
    if any(not _is_tensor(g) for g in params.values()):
        return True
    return any(True for _ in _inconsistent_inputs(ctx, target, call.args, call.kwargs, cotangent, inputs))


def expect_batch_independent(ctx, target, args, kwargs=None, vary=(0,), call=None, call_many=None):
    """Changing batch item 1 must not change the output of batch item 0. ``call(target,
    *args, **kwargs)`` runs the target (default ``ctx.call``); ``call_many(target, [args, ...],
    kwargs)`` runs it on several inputs at once (one request) and returns the results."""
    kwargs, call = kwargs or {}, call or ctx.call
    changed = [a.clone() for a in args]
    for index in vary:
        changed[index][1:] = ctx.randn(*changed[index][1:].shape, dtype=changed[index].dtype)
    if call_many is not None:
        results = call_many(target, [list(args), list(args), changed], kwargs)
    else:
        results = [call(target, *args, **kwargs), call(target, *args, **kwargs),
                   call(target, *changed, **kwargs)]
    out = first_output(ctx, results[0], OUTPUT)
    again = first_output(ctx, results[1], OUTPUT)
    if again.shape != out.shape or not torch.equal(again, out):
        fail(bilingual("Dua panggilan dengan masukan yang sama memberi hasil berbeda dalam mode eval: "
                       "dropout masih aktif? Pakai nn.Dropout atau F.dropout(..., training=self.training).",
                       "Two calls with the same input give different results in eval mode: is dropout "
                       "still active? Use nn.Dropout or F.dropout(..., training=self.training)."))
    out2 = first_output(ctx, results[2], OUTPUT)
    tol = ctx.tolerance("property")
    if out2.shape != out.shape or not torch.allclose(out2[0], out[0], rtol=tol.rtol, atol=tol.atol):
        fail(bilingual("Keluaran item batch 0 berubah ketika hanya item batch lain yang diubah: "
                       "ada pencampuran antar-item batch (periksa view/reshape/transpose dan sumbu "
                       "softmax atau mean).",
                       "The output of batch item 0 changed when only other batch items changed: "
                       "items of the batch are mixed (check view/reshape/transpose and the axis of "
                       "softmax or mean)."))


def expect_inputs_untouched(ctx, target, args, kwargs=None, call=None):
    """The forward must not modify its inputs in place. ``call(target, *args, **kwargs)``
    returns (result, the inputs afterwards) (default ``session.call_returning_inputs``)."""
    kwargs = kwargs or {}
    _, after = (call or ctx.session.call_returning_inputs)(target, *args, **kwargs)
    for index, (before, now) in enumerate(zip(args, after)):
        if isinstance(before, torch.Tensor) and (
                not isinstance(now, torch.Tensor) or now.shape != before.shape
                or not torch.equal(now, before)):
            fail(bilingual(f"Masukan ke-{index + 1} diubah di tempat (in-place) oleh forward. "
                           "Hindari operasi seperti `x += ...`, `x.mul_()` atau `masked_fill_` "
                           "pada masukan.",
                           f"Input number {index + 1} was modified in place by forward. Avoid "
                           "operations such as `x += ...`, `x.mul_()` or `masked_fill_` on inputs."))


# What the meta device answers where code needs a tensor's values, which it does not hold
# (``if mask.any():``, ``.item()``, an assert on the values, ``.tolist()``, boolean indexing):
# errors of meta itself, not of the code's devices, which a GPU would run.
META_HAS_NO_DATA = ("cannot be called on meta tensors", "Cannot copy out of meta tensor",
                    "attempted to run this operator with Meta tensors",
                    "data-independent implementation does not exist")


def meta_has_no_data(error):
    """Whether a ``StudentError`` of a run on meta is meta's own (``META_HAS_NO_DATA``)."""
    return any(sign in error.message for sign in META_HAS_NO_DATA)


def expect_runs_on_meta(ctx, target_name, ctor_args, args, kwargs=None, function=False):
    """Runs on the ``meta`` device: catches tensors created on a fixed device inside forward.

    Rule: where the run stops at a value meta does not hold (``META_HAS_NO_DATA``), meta cannot
    tell whether the code is tied to a device, and the check passes if the code runs on the CPU:
    branching on a tensor's values is correct code, and it is not charged for meta's limits."""
    kwargs = kwargs or {}
    meta_args = [a.to("meta") if isinstance(a, torch.Tensor) else a for a in args]
    meta_kwargs = {k: v.to("meta") if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    try:
        target = target_name if function else ctx.new(target_name, *ctor_args, device="meta")
        result = ctx.call(target, *meta_args, **meta_kwargs)
    except ctx.StudentError as error:
        cpu_target = target_name if function else ctx.new(target_name, *ctor_args)
        ctx.call(cpu_target, *args, **kwargs)  # raises on the CPU too: that error is not about devices
        if meta_has_no_data(error):
            return
        fail(bilingual(f"Gagal dijalankan di perangkat (device) lain ({error.type}: {error.message[:200]}). "
                       "Buat tensor baru di perangkat yang sama dengan masukan, mis. "
                       "`torch.ones(..., device=x.device)` atau `.to(x.device)`.",
                       f"Fails on another device ({error.type}: {error.message[:200]}). Create new "
                       "tensors on the input's device, e.g. `torch.ones(..., device=x.device)` "
                       "or `.to(x.device)`."))
    outputs = result if isinstance(result, (tuple, list)) else [result]
    for output in outputs:
        if not isinstance(output, torch.Tensor) or output.device.type != "meta":
            fail(bilingual("Keluaran tidak berada di perangkat (device) yang sama dengan masukan.",
                           "The output is not on the same device as the input."))


def expect_float64(ctx, out64, out32, ref64, ref32, what):
    """After .double() the student's code must compute in float64. Where its float32 result
    already matches the reference, the float64 one must match to float64 precision; where it
    does not (graded by the numeric checks), float64 must compute the same thing, in float64
    (``expect_float64_precision``)."""
    ctx.tensor(out64, what, dtype=torch.float64)
    ctx.tensor(out32, what, shape=out64.shape)
    if ctx.close(out32, ref32):
        ctx.expect_close(out64, ref64, what, "float64")
    else:
        expect_float64_precision(ctx, out64, out32)


def expect_float64_precision(ctx, out64, out32):
    """``out64`` (a float64 run) computes what ``out32`` (the float32 run of the same code)
    does, and really in float64: a result that is only float32's cast to float64 (the same
    numbers to the last bit) is float32 in disguise."""
    if not ctx.same(out64, out32.to(torch.float64)):
        fail(bilingual("Hasil dalam float64 berbeda dari hasil float32 modul yang sama; ada bagian "
                       "yang bergantung pada dtype.",
                       "The float64 result differs from the float32 result of the same module; some "
                       "part depends on the dtype."))
    finite = torch.isfinite(out64)
    if bool(finite.any()) and torch.equal(out64[finite], out32.to(torch.float64)[finite]) and bool(
            (out32[finite] != out32[finite].round()).any()):
        fail(bilingual("Hasil dalam float64 sama persis dengan hasil float32 yang diubah ke float64: "
                       "perhitungannya masih dilakukan dalam float32.",
                       "The float64 result is exactly the float32 result cast to float64: the "
                       "computation still runs in float32."))


# -- parameter shapes the contract fixes ---------------------------------------------------
# -- attention weights and masks (sdpa, mha, dec) ---------------------------------------
HINT_MASK = bilingual(
    "Mask bertipe bool dengan True = DIBLOKIR. Isi skor yang diblokir dengan -inf (atau "
    "bilangan negatif sangat besar) SEBELUM softmax, mis. `scores.masked_fill(mask, "
    "float('-inf'))`. Ingat: salah satu bab memakai konvensi terbalik (mask == 0 diblokir).",
    "The mask is boolean with True = BLOCKED. Fill blocked scores with -inf (or a very large "
    "negative number) BEFORE the softmax, e.g. `scores.masked_fill(mask, float('-inf'))`. "
    "Careful: one chapter uses the opposite convention (mask == 0 blocks).")


def expect_rows_sum_to_one(ctx, weights):
    tol = ctx.tolerance("property")
    sums = weights.double().sum(-1)
    if not torch.allclose(sums, torch.ones_like(sums), rtol=tol.rtol, atol=max(tol.atol, 1e-5)):
        # which axis the softmax was taken over is named once, by the diagnosis (sdpa.softmax_axis)
        fail(bilingual("Setiap baris bobot attention harus berjumlah 1: distribusi atas kunci (key).",
                       "Every row of the attention weights must sum to 1 (a distribution over the keys)."))


def expect_masked(ctx, weights, mask):
    """Blocked positions get weight 0; an inverted convention is named as such. The masks used
    here leave every row some key, so NaN is never the -inf of a row with every key blocked:
    it is not read as 0."""
    mask = mask.expand_as(weights)
    finite = bool(torch.isfinite(weights).all())
    blocked = weights[mask]
    if blocked.numel() and _all_zero(blocked):
        if finite:
            return
        fail(_NAN_WEIGHTS)
    # Under an inverted mask, rows without any True have every key blocked: their weights
    # are NaN (-inf) or uniform (-1e9), so only the other rows can show the inversion.
    inverted_rows = mask.any(dim=-1, keepdim=True).expand_as(mask)
    allowed = weights[~mask & inverted_rows]
    if allowed.numel() and _all_zero(allowed):
        fail(bilingual("Mask terbalik: posisi bernilai True justru diperhatikan dan posisi False "
                       "diblokir. Di tugas ini True berarti DIBLOKIR (seperti "
                       "`torch.nn.MultiheadAttention`), bukan konvensi `mask == 0` dari salah satu bab.",
                       "Inverted mask: positions that are True are attended to and False ones are "
                       "blocked. Here True means BLOCKED (as in `torch.nn.MultiheadAttention`), not "
                       "the `mask == 0` convention of one chapter."))
    if not finite:
        fail(_NAN_WEIGHTS)
    fail(bilingual("Posisi yang diblokir mask masih mendapat bobot attention tidak nol. Terapkan "
                   "mask pada skor sebelum softmax.",
                   "Blocked positions still get a non-zero attention weight. Apply the mask to the "
                   "scores before the softmax."))


_NAN_WEIGHTS = bilingual(
    "Bobot attention berisi NaN atau inf, padahal setiap baris mask masih menyisakan kunci (key) yang "
    "boleh dilihat: posisi yang diblokir harus berbobot 0, bukan NaN.",
    "The attention weights contain NaN or inf although every row of the mask leaves some key "
    "visible: blocked positions must get weight 0, not NaN.")


def _all_zero(values):
    return bool(torch.isfinite(values).all()) and float(values.abs().max()) <= 1e-9


def padding_mask(batch, length, blocked_per_item):
    """(B, 1, 1, Tk) with the last ``blocked_per_item[b]`` keys of item b blocked."""
    mask = torch.zeros(batch, 1, 1, length, dtype=torch.bool)
    for b, count in enumerate(blocked_per_item):
        if count:
            mask[b, ..., length - count:] = True
    return mask


def expect_blocked_values_ignored(ctx, run, values_index, args, mask):
    """Changing the values of blocked keys must not change the outputs of the queries they
    are blocked for."""
    values = args[values_index]
    batch_shape, tq, tk = values.shape[:-2], args[0].shape[-2], values.shape[-2]
    blocked = mask
    while blocked.dim() > len(batch_shape) + 2:  # fold the head axis of a (B, 1, 1, Tk) mask
        blocked = blocked.all(dim=len(batch_shape))
    blocked = blocked.expand(*batch_shape, tq, tk)
    keys = blocked.all(dim=-2)  # keys no query of the item may see (padding)
    rows = torch.ones(*batch_shape, tq, dtype=torch.bool)
    if not keys.any():  # a causal mask: change the later keys, watch the earlier queries
        keys = torch.zeros(*batch_shape, tk, dtype=torch.bool)
        keys[..., tk // 2:] = True
        rows = blocked[..., tk // 2:].all(dim=-1)
    noise = ctx.randn(*values.shape, dtype=values.dtype, scale=3)
    changed = list(args)
    changed[values_index] = torch.where(keys.unsqueeze(-1), noise, values)
    out, out2 = run(list(args)), run(changed)
    tol = ctx.tolerance("property")
    if out.shape != out2.shape or not torch.allclose(out[rows], out2[rows], rtol=tol.rtol, atol=tol.atol):
        fail(BLOCKED_VALUES_LEAK)


# Also what values mixed across positions (heads split by a plain view) do: ``consequences``
# reads it as following from a failed value check when none of the target's passes.
BLOCKED_VALUES_LEAK = bilingual(
    "Keluaran berubah ketika nilai (value) v pada kunci (key) yang diblokir diubah: posisi yang "
    "diblokir masih ikut dihitung.",
    "The output changes when the values (v) of blocked keys change: blocked positions still contribute.")


# -- the gate: does the code compute at all? ---------------------------------------------------
# Every target has one check of category "sensitivity" (the registry's docstring says why): it
# fails only for degenerate code (an output that ignores an input it must depend on, is the
# input itself, or holds nothing but NaN or inf), never for disagreeing with the reference.
GATE_TAIL = bilingual(" Pemeriksaan lain untuk bagian ini baru dinilai setelah pemeriksaan ini lulus.",
                      " The other checks of this part are graded only once this one passes.")
HINT_GATE = bilingual(
    "Poin untuk sifat-sifat (bentuk, masking, gradien, batch, dtype, ...) hanya diberikan untuk kode yang "
    "benar-benar menghitung: keluarannya berhingga (bukan NaN atau inf) dan berubah ketika "
    "masukannya berubah. Selesaikan perhitungannya lebih dahulu.",
    "The points for properties (shapes, masking, gradients, batch, dtype, ...) go only to code "
    "that really computes: its output is finite (not NaN or inf) and changes when its inputs "
    "change. Finish the computation first.")
HINT_GATE_BLOCK = bilingual(
    HINT_GATE.id + " Blok ini memakai sub-layer Anda sendiri: bila salah satunya hanya "
    "menghasilkan NaN atau nilai tetap, blok pun demikian.",
    HINT_GATE.en + " This block uses your own sub-layers: when one of them only produces NaN or "
    "fixed values, so does the block.")


def computes(ctx, run):
    """Run the gate's verdicts (``run()``); an error raised by the student's code is not a
    verdict of degeneracy but a bug of its own, which the checks after the gate name."""
    try:
        run()
    except ctx.StudentError:
        return


def tensors(result, count):
    """The ``count`` tensors a call returned (a tensor, or a tuple or list starting with them),
    or None when it returned something else (the shape checks name that)."""
    items = list(result) if isinstance(result, (tuple, list)) else [result]
    items = items[:count]
    if len(items) < count or not all(_is_tensor(t) and not isinstance(t, RemoteTensor) for t in items):
        return None
    return items


def movement(a, b):
    """How far an output moved between two calls: the mean absolute change where both are
    finite (0 where none is); a change of shape is a movement without measure (inf)."""
    if a.shape != b.shape:
        return math.inf
    both = torch.isfinite(a) & torch.isfinite(b)
    if not bool(both.any()):
        return 0.0
    return float((a.double() - b.double())[both].abs().mean())


def spread(value):
    """How far the finite values of one output lie from their mean (mean absolute deviation)."""
    finite = value.double()[torch.isfinite(value)]
    if not finite.numel():
        return 0.0
    return float((finite - finite.mean()).abs().mean())


def fair_share(moved, reference_moved):
    """``moved`` is at least ``GATE_SHARE`` of what the reference moved (which must be > 0)."""
    return reference_moved > 0 and moved > 0 and moved >= GATE_SHARE * reference_moved


def expect_finite_somewhere(value, what):
    w_id, w_en = label(what)
    if value.numel() and not bool(torch.isfinite(value).any()):
        fail(bilingual(f"{w_id} hanya berisi NaN atau inf." + GATE_TAIL.id,
                       f"Every value of {w_en[:1].lower() + w_en[1:]} is NaN or inf." + GATE_TAIL.en))


def expect_depends(base, changed, what, on, reference):
    """``base`` and ``changed``: the output ``what`` for inputs that differ only in ``on``, an
    (input, verdict) pair of Bilingual, e.g. ("kueri (query) q", "q diabaikan"); ``reference``:
    the reference's (base, changed) on the same inputs. The output must move by a fair share
    (``GATE_SHARE``) of what the reference's moves."""
    if not fair_share(movement(base, changed), movement(*reference)):
        fail_ignores(what, on)


def fail_ignores(what, on):
    w_id, w_en = label(what)
    (o_id, o_en), (s_id, s_en) = label(on[0]), label(on[1])
    fail(bilingual(f"{w_id} (hampir) tidak berubah ketika {o_id} diganti dengan angka lain: {s_id}."
                   + GATE_TAIL.id,
                   f"Replacing {o_en} with other numbers leaves {w_en[:1].lower() + w_en[1:]} (almost) "
                   f"as before: {s_en}." + GATE_TAIL.en))


def expect_not_identity(out, x, out2, x2, reference, moved_otherwise=False):
    """out - x depends on x by a fair share of how the reference's (``reference``: its outputs
    for x and x2) does (unless ``moved_otherwise``: the output already responds to another
    input): forward does more than return x, plus something fixed or tiny."""
    if moved_otherwise or out.shape != x.shape or out2.shape != x2.shape:
        return
    ref_out, ref_out2 = reference
    if not fair_share(movement(out - x, out2 - x2), movement(ref_out - x, ref_out2 - x2)):
        fail(bilingual("Keluaran dikurangi masukannya (keluaran − x) (hampir) tidak bergantung pada x: "
                       "forward hanya mengembalikan x, mungkin ditambah sesuatu yang tetap atau sangat "
                       "kecil." + GATE_TAIL.id,
                       "The output minus the input (output − x) (almost) does not depend on x: forward "
                       "only returns x, perhaps plus something fixed or tiny." + GATE_TAIL.en))


def one_token_changed(x, other):
    """Two inputs that differ from ``x`` in one token each: the first and the last token of
    batch item 0 (taken from ``other``), and where they are."""
    changed = []
    for t in (0, x.shape[1] - 1):
        y = x.clone()
        y[0, t] = other[0, t]
        changed.append(((0, t), y))
    return changed


def _moved_elsewhere(out, out2, where):
    """The largest change of the outputs at every position but ``where`` (batch item, token)."""
    if out.shape != out2.shape or out.dim() < 3:
        return math.inf if out.shape != out2.shape else 0.0
    keep = torch.ones(out.shape[:2], dtype=torch.bool)
    keep[where] = False
    a, b = out[keep].double(), out2[keep].double()
    both = torch.isfinite(a) & torch.isfinite(b)
    return float((a - b)[both].abs().max()) if bool(both.any()) else 0.0


def expect_mixes_tokens(out, changed, reference, reference_changed, places, attention_calls):
    """A block's tokens meet in its attention: with one token of the input changed (``changed``:
    the outputs for the inputs of ``one_token_changed``, at ``places``), some output at another
    position (another token, or another batch item for a block that mixes those) moves by a
    fair share of the most the reference's do (``reference``, ``reference_changed``). Not asked
    when the attention sub-layer was replaced by a stand-in (a broken attention is its own
    checks' business, not the block's)."""
    if any(call.replaced for call in attention_calls):
        return
    moved = max(_moved_elsewhere(out, o, w) for o, w in zip(changed, places))
    wanted = max(_moved_elsewhere(reference, r, w) for r, w in zip(reference_changed, places))
    if not fair_share(moved, wanted):
        fail(bilingual("Mengubah satu token (hampir) tidak mengubah keluaran di posisi lain: token-token "
                       "tidak saling bertemu lewat attention (mis. blok hanya mengembalikan x atau "
                       "LayerNorm(x))." + GATE_TAIL.id,
                       "Changing one token leaves the outputs at the other positions (almost) as they "
                       "were: the tokens never meet through attention (e.g. the block only returns x or "
                       "LayerNorm(x))." + GATE_TAIL.en))


def expect_spread(value, reference, message):
    """The values of ``value`` spread (over positions) by a fair share of the reference's;
    ``message``: a Bilingual saying what it means when they do not."""
    if not fair_share(spread(value), spread(reference)):
        fail(bilingual(message.id + GATE_TAIL.id, message.en + GATE_TAIL.en))


X = ("x", bilingual("x diabaikan", "x is ignored"))
