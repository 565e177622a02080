"""Verdicts shared by the checks of several assignments (all decided in the trusted process)."""

import torch

from autograder.checks.registry import fail, text


def expect_present(ctx, name, kind, init_params=(), forward_params=(), defaults=()):
    """``name`` exists, is a function / an nn.Module class, and accepts the contract's arguments
    (those in ``defaults`` must be optional)."""
    info = ctx.session.load_info["names"].get(name, {"kind": "missing"})
    if info["kind"] == "missing":
        fail(text(f"`{name}` tidak ditemukan. Pastikan sel yang mendefinisikannya tidak error "
                  "dan namanya ditulis persis.",
                  f"`{name}` was not found. Make sure the cell that defines it runs without "
                  "errors and that the name is spelled exactly."))
    if kind == "function" and info["kind"] != "function":
        fail(text(f"`{name}` harus berupa fungsi.", f"`{name}` must be a function."))
    if kind == "module":
        if info["kind"] != "class" or not info.get("is_module"):
            fail(text(f"`{name}` harus berupa class turunan torch.nn.Module.",
                      f"`{name}` must be a class derived from torch.nn.Module."))
    _expect_parameters(name, info.get("parameters"), init_params, "")
    for optional in defaults:
        declared = {p["name"]: p for p in info.get("parameters") or []}
        if optional in declared and not declared[optional]["default"]:
            fail(text(f"Argumen `{optional}` pada `{name}` harus punya nilai bawaan.",
                      f"The argument `{optional}` of `{name}` must have a default value."))
    if kind == "module":
        _expect_parameters(name, info.get("forward"), forward_params, ".forward")


def _expect_parameters(name, declared, required, suffix):
    if declared is None or not required:
        return
    names = [p["name"] for p in declared]
    takes_kwargs = any(p["kind"] == "VAR_KEYWORD" for p in declared)
    takes_args = any(p["kind"] == "VAR_POSITIONAL" for p in declared)
    positional = [p for p in declared if p["kind"] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")]
    wanted = ", ".join(required)
    ok = all(r in names or takes_kwargs for r in required) and (
        len(positional) >= len(required) or takes_args)
    required_without_default = [p["name"] for p in positional[len(required):]
                                if not p["default"]] + [
        p["name"] for p in declared if p["kind"] == "KEYWORD_ONLY" and not p["default"]]
    if not ok or required_without_default:
        fail(text(f"Tanda tangan `{name}{suffix}` harus menerima ({wanted}); "
                  f"yang ditemukan: ({', '.join(names)}).",
                  f"`{name}{suffix}` must accept ({wanted}); found ({', '.join(names)})."))


def expect_param_count(ctx, obj, expected_shapes, label):
    """Parameter paths and shapes match the contract, then the total."""
    total = sum(_numel(shape) for shape in obj.params.values())
    expected_total = sum(_numel(shape) for shape in expected_shapes.values())
    for path, shape in expected_shapes.items():
        if path not in obj.aliases:
            fail(text(f"{label}: parameter `{path}` tidak ada (total {total} parameter).",
                      f"{label}: parameter `{path}` is missing ({total} parameters in total)."))
        if obj.aliases[path] != tuple(shape):
            fail(text(f"{label}: `{path}` berbentuk {obj.aliases[path]}, seharusnya {tuple(shape)}.",
                      f"{label}: `{path}` has shape {obj.aliases[path]}, expected {tuple(shape)}."))
    if total != expected_total:
        shared = text(" Ada parameter yang dipakai bersama (mis. satu LayerNorm untuk dua tempat)?",
                      " Is a parameter shared (e.g. one LayerNorm used in two places)?") \
            if total < expected_total and len(obj.aliases) > len(obj.params) else text("", "")
        fail(text(f"{label}: {total} parameter, seharusnya {expected_total}.{shared['id']}",
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


def expect_gradient_flow(ctx, target, args, cotangent, kwargs=None, inputs=(), skip=()):
    """Every parameter (but those under the ``skip`` prefixes, graded on their own) and each
    listed input receives a gradient from the output."""
    param_grads, input_grads = ctx.session.grad(target, cotangent, *args, **(kwargs or {}))
    skip = tuple(prefix + "." for prefix in skip)
    dead = [path for path, g in param_grads.items()
            if (g is None or g != g) and not path.startswith(skip)]
    if dead:
        fail(text(f"Gradien tidak sampai ke: {', '.join(dead[:6])}. Cari `.detach()`, "
                  "`torch.no_grad()`, `.data` atau tensor yang dibuat ulang di forward.",
                  f"No gradient reaches: {', '.join(dead[:6])}. Look for `.detach()`, "
                  "`torch.no_grad()`, `.data` or tensors rebuilt inside forward."))
    for index in inputs:
        grad = input_grads[index] if index < len(input_grads) else None
        if grad is None or grad != grad or grad == 0:
            fail(text(f"Gradien tidak mengalir ke masukan ke-{index + 1}.",
                      f"No gradient flows back to input number {index + 1}."))


def expect_batch_independent(ctx, target, args, kwargs=None, vary=(0,)):
    """Changing batch item 1 must not change the output of batch item 0."""
    kwargs = kwargs or {}
    out = first_output(ctx, ctx.call(target, *args, **kwargs), "keluaran")
    ctx.expect_nontrivial(out, *args)
    changed = [a.clone() for a in args]
    for index in vary:
        changed[index][1:] = ctx.randn(*changed[index][1:].shape, dtype=changed[index].dtype)
    out2 = first_output(ctx, ctx.call(target, *changed, **kwargs), "keluaran")
    tol = ctx.tolerance("property")
    if out2.shape != out.shape or not torch.allclose(out2[0], out[0], rtol=tol.rtol, atol=tol.atol):
        fail(text("Keluaran item batch 0 berubah ketika hanya item batch lain yang diubah: "
                  "ada pencampuran antar-item batch (periksa view/reshape/transpose dan sumbu "
                  "softmax atau mean).",
                  "The output of batch item 0 changed when only other batch items changed: "
                  "items of the batch are mixed (check view/reshape/transpose and the axis of "
                  "softmax or mean)."))


def expect_inputs_untouched(ctx, target, args, kwargs=None):
    """The forward must not modify its inputs in place."""
    kwargs = kwargs or {}
    _, after = ctx.session.call(target, *args, **kwargs)
    for index, (before, now) in enumerate(zip(args, after)):
        if isinstance(before, torch.Tensor) and (
                not isinstance(now, torch.Tensor) or now.shape != before.shape
                or not torch.equal(now, before)):
            fail(text(f"Masukan ke-{index + 1} diubah di tempat (in-place) oleh forward. "
                      "Hindari operasi seperti `x += ...`, `x.mul_()` atau `masked_fill_` "
                      "pada masukan.",
                      f"Input number {index + 1} was modified in place by forward. Avoid "
                      "operations such as `x += ...`, `x.mul_()` or `masked_fill_` on inputs."))


def expect_runs_on_meta(ctx, target_name, ctor_args, args, kwargs=None, function=False):
    """Runs on the ``meta`` device: catches tensors created on a fixed device inside forward."""
    kwargs = kwargs or {}
    meta_args = [a.to("meta") if isinstance(a, torch.Tensor) else a for a in args]
    meta_kwargs = {k: v.to("meta") if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    try:
        target = target_name if function else ctx.new(target_name, *ctor_args, device="meta")
        result = ctx.call(target, *meta_args, **meta_kwargs)
    except ctx.StudentError as error:
        fail(text(f"Gagal dijalankan di device lain ({error.type}: {error.message[:200]}). "
                  "Buat tensor baru di device masukan, mis. `torch.ones(..., device=x.device)` "
                  "atau `.to(x.device)`.",
                  f"Fails on another device ({error.type}: {error.message[:200]}). Create new "
                  "tensors on the input's device, e.g. `torch.ones(..., device=x.device)` "
                  "or `.to(x.device)`."))
    outputs = result if isinstance(result, (tuple, list)) else [result]
    for output in outputs:
        if not isinstance(output, torch.Tensor) or output.device.type != "meta":
            fail(text("Keluaran tidak berada di device yang sama dengan masukan.",
                      "The output is not on the same device as the input."))


def expect_float64(ctx, out64, out32, ref64, ref32, what):
    """After .double() the student's code must compute in float64. Where its float32 result
    already matches the reference, the float64 one must match to float64 precision; where it
    does not (graded by the numeric checks), float64 must at least compute the same thing."""
    ctx.tensor(out64, what, dtype=torch.float64)
    ctx.tensor(out32, what, shape=out64.shape)
    if ctx.close(out32, ref32):
        ctx.expect_close(out64, ref64, what, "float64")
    elif not ctx.close(out64, out32.double(), "float32"):
        fail(text("Hasil dalam float64 berbeda dari hasil float32 modul yang sama; ada bagian "
                  "yang bergantung pada dtype.",
                  "The float64 result differs from the float32 result of the same module; some "
                  "part depends on the dtype."))
