"""Hidden sizes that a hard-coded submission could pass with: ``course.toml`` refuses them.

The hidden-size checks exist to tell code that takes its sizes from its arguments and inputs from
code that writes them as numbers. They can only do that when every quantity such a number could
stand for differs, at the hidden sizes, from each value the student has seen in the same role:
the chapter's sizes (``[sizes.chapter]``, which the notebooks' expected numbers and the grader's
visible checks use) and the sizes the notebooks' own sanity cells call the graded code with. For
example ``d_model = 32, num_heads = 8`` differ from the chapter's 16 and 4, but give its
``d_k = 4``: a ``view(B, T, -1, 4)`` then passes every hidden-size check unnoticed.

Quantities (their role is what a student could write as a number):

- ``d_model``, ``num_heads``, ``d_k = d_model / num_heads``, ``d_ff``, ``d_ff / d_model`` (a
  ``2 * d_model`` written for ``d_ff``), ``batch``;
- the two sequence lengths, each against every length seen, and against each other: with
  ``length == decoder_length`` a query/key or decoder/memory mix-up has the right shape;
- a size of 1 (``batch``, ``num_heads``, ``d_k``, a length) broadcasts, so a dropped or swapped
  axis passes.

``traps(chapter, hidden, notebooks)`` returns one sentence per trap (empty: none); config.py
turns them into one ConfigError.
"""

import ast
import json
from fractions import Fraction

# The graded callables and which size each positional argument is (None: not a size).
SIGNATURES = {
    "MultiHeadAttention": ("d_model", "num_heads"),
    "FeedForward": ("d_model", "d_ff"),
    "EncoderBlock": ("d_model", "num_heads", "d_ff"),
    "DecoderBlock": ("d_model", "num_heads", "d_ff"),
    "Transformer": (None, None, "d_model", "num_heads", "d_ff"),
    "positional_encoding": ("length", "d_model"),
    "causal_mask": ("length",),
}
# torch's tensor constructors (without a dtype: masks are left out): a shape's axes, by its
# number of axes.
TENSORS = {"randn", "rand", "zeros", "ones", "empty"}
AXES = {3: ("batch", "length", "width"),
        4: ("batch", "num_heads", "length", "d_k")}


def seen_in_notebooks(paths):
    """{role: {value: where}} for the sizes the notebooks' visible code cells pass to the graded
    code and to torch's tensor constructors (hidden test cells and solutions excluded)."""
    seen = {}
    for path in paths:
        try:
            cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
        except (OSError, ValueError):
            continue  # the course's own problem, reported where the notebook is used
        for cell in cells:
            nbgrader = cell.get("metadata", {}).get("nbgrader", {})
            if cell.get("cell_type") != "code" or nbgrader.get("solution") or nbgrader.get("grade"):
                continue
            source = "".join(cell.get("source", ""))
            try:
                tree = ast.parse(source)
            except SyntaxError:
                continue
            for node in ast.walk(tree):
                for role, value in _sizes_of_call(node):
                    seen.setdefault(role, {}).setdefault(value, f"in {path.name}'s cell `{ast.unparse(node)}`")
    return seen


def _sizes_of_call(node):
    if not isinstance(node, ast.Call):
        return []
    function = node.func
    name = function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)
    numbers = [a.value if isinstance(a, ast.Constant) and type(a.value) is int else None for a in node.args]
    if name in SIGNATURES:
        roles = SIGNATURES[name]
    elif (name in TENSORS and isinstance(function, ast.Attribute) and all(n is not None for n in numbers)
          and not any(k.arg == "dtype" for k in node.keywords)):  # a mask's shape says less
        roles = AXES.get(len(numbers), ())
    else:
        return []
    found = [(role, n) for role, n in zip(roles, numbers) if role and n is not None]
    if name in SIGNATURES:  # Transformer(..., d_model=32, num_heads=4, d_ff=64)
        found += [(k.arg, k.value.value) for k in node.keywords if k.arg in roles and k.arg
                  and isinstance(k.value, ast.Constant) and type(k.value.value) is int]
    given = dict(found)
    if "d_model" in given and given.get("num_heads") and given["d_model"] % given["num_heads"] == 0:
        found.append(("d_k", given["d_model"] // given["num_heads"]))
    return found


def traps(chapter, hidden, notebooks=()):
    """One sentence per quantity that the hidden sizes share with what the student sees."""
    seen = {}  # role -> {value: where}

    def see(role, value, where):
        seen.setdefault(role, {}).setdefault(value, where)

    for key in ("d_model", "num_heads", "d_ff", "batch"):
        see(key, getattr(chapter, key), f"[sizes.chapter] {key}")
    see("d_k", chapter.d_model // chapter.num_heads,
        f"the chapter's d_k ({chapter.d_model} / {chapter.num_heads})")
    for key in ("length", "decoder_length"):
        see("length", getattr(chapter, key), f"[sizes.chapter] {key}")
    for role, values in seen_in_notebooks(notebooks).items():
        for value, where in values.items():
            for target in (("d_model", "d_k") if role == "width" else (role,)):
                see(target, value, where)

    d_k = hidden.d_model // hidden.num_heads
    quantities = [("d_model", "d_model", hidden.d_model), ("num_heads", "num_heads", hidden.num_heads),
                  ("d_k", f"d_k = d_model / num_heads = {hidden.d_model} / {hidden.num_heads}", d_k),
                  ("d_ff", "d_ff", hidden.d_ff), ("batch", "batch", hidden.batch),
                  ("length", "length", hidden.length), ("length", "decoder_length", hidden.decoder_length)]
    found = []
    for role, shown, value in quantities:
        if value in seen.get(role, {}):
            found.append(f"{shown} = {value} is also {seen[role][value]}: a submission that writes "
                         f"{value} for it passes the hidden-size checks")
        elif value == 1 and role != "d_model":
            found.append(f"{shown} = 1: an axis of size 1 broadcasts, so code that drops or swaps "
                         "it passes the hidden-size checks")
    ratio, chapter_ratio = Fraction(hidden.d_ff, hidden.d_model), Fraction(chapter.d_ff, chapter.d_model)
    if ratio == chapter_ratio:
        found.append(f"d_ff / d_model = {hidden.d_ff} / {hidden.d_model} is the chapter's ratio "
                     f"{chapter.d_ff} / {chapter.d_model}: a submission that writes d_ff as "
                     f"{ratio} * d_model passes the hidden-size checks")
    if hidden.length == hidden.decoder_length:
        found.append(f"length = decoder_length = {hidden.length}: with one length for queries and "
                     "keys (decoder and memory), code that takes a size from the wrong sequence "
                     "passes the hidden-size checks")
    return found
