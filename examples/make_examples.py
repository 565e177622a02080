"""Build the example submissions in examples/submissions/ from the course's source notebooks.

    .venv/bin/python examples/make_examples.py          # (re)write the examples
    .venv/bin/python examples/make_examples.py --check  # exit 1 if they are stale

A submitted notebook is what a student hands in after filling in the released one:
assignments/source/<a>/<a>.ipynb with the solution markers gone (the student wrote the
code there) and the hidden tests removed (nbgrader never releases them). The layout is
nbgrader's submitted/ folder: examples/submissions/<student>/<assignment>/<assignment>.ipynb.
Rerun after assignments/build_notebooks.py changes the notebooks. One student per case:

    andi   correct                                   (all assignments)
    budi   a typical bug                             (all assignments)
             attention: no 1/sqrt(d_k) scale in scaled_dot_product_attention
             encoder:   post-LN residual outside the LayerNorm, x + ln1(attn(x))
             decoder:   self-attention without the causal mask
             transformer: softmax before the cross-entropy in train_step
    citra  a notebook file that is not valid JSON    (attention: cut off half-way)
    dewi   a syntax error in the causal_mask cell    (attention; the other cells are fine)
"""

import argparse
import json
import sys
from pathlib import Path

import nbformat

from autograder import config

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "assignments" / "source"
OUT = ROOT / "examples" / "submissions"
# Every assignment of the kit's course.toml that has a source notebook.
ASSIGNMENTS = tuple(a for a in config.load(ROOT / "course.toml").assignments
                    if (SOURCE / a / f"{a}.ipynb").is_file())

# (assignment, student) -> [(text in a solution cell of the source, what the student wrote)]
BUGS = {
    ("attention", "budi"): [("q @ k.transpose(-2, -1) / math.sqrt(d_k)", "q @ k.transpose(-2, -1)")],
    ("attention", "dewi"): [("def causal_mask(t):", "def causal_mask(t)")],
    ("encoder", "budi"): [("h = self.ln1(x + self.attn(x, x, x, mask)[0])",
                           "h = x + self.ln1(self.attn(x, x, x, mask)[0])")],
    ("decoder", "budi"): [("h = x + self.self_attn(n, n, n, mask)[0]",
                           "h = x + self.self_attn(n, n, n)[0]")],
    ("transformer", "budi"): [("loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt_out.reshape(-1))",
                               "loss = F.cross_entropy(logits.softmax(-1).reshape(-1, logits.size(-1)), "
                               "tgt_out.reshape(-1))")],
}
SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def submitted(assignment, student):
    """The text of one student's submitted notebook."""
    nb = nbformat.read(SOURCE / assignment / f"{assignment}.ipynb", as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if meta.get("solution"):
                cell.source = _drop_lines(cell.source, lambda line: line.strip() in SOLUTION_MARKERS)
            cell.source = _strip_hidden_tests(cell.source)
    for old, new in BUGS.get((assignment, student), []):
        cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and old in c.source]
        if len(cells) != 1:
            raise SystemExit(f"make_examples: {old!r} is not in exactly one solution cell of {assignment}")
        cells[0].source = cells[0].source.replace(old, new)
    nbformat.validate(nb)
    return nbformat.writes(nb) + "\n"


def _drop_lines(source, drop):
    return "\n".join(line for line in source.split("\n") if not drop(line))


def _strip_hidden_tests(source):
    kept, hidden = [], False
    for line in source.split("\n"):
        if line.strip() == "### BEGIN HIDDEN TESTS":
            hidden = True
        elif line.strip() == "### END HIDDEN TESTS":
            hidden = False
        elif not hidden:
            kept.append(line)
    return "\n".join(kept)


def examples():
    """{path: text} of every example submission."""
    files = {}
    for assignment in ASSIGNMENTS:
        for student in ("andi", "budi"):
            if student == "andi" or (assignment, student) in BUGS:
                files[_path(student, assignment)] = submitted(assignment, student)
    text = submitted("attention", "citra")
    broken = text[: len(text) // 2]  # as after an upload that broke off or a crash while saving
    try:
        json.loads(broken)
    except ValueError:
        files[_path("citra", "attention")] = broken
    else:
        raise SystemExit("make_examples: citra's notebook must not be valid JSON")
    files[_path("dewi", "attention")] = submitted("attention", "dewi")
    return files


def _path(student, assignment):
    return OUT / student / assignment / f"{assignment}.ipynb"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if an example is stale")
    args = parser.parse_args()
    wanted = examples()
    present = set(OUT.glob("*/*/*.ipynb"))
    if args.check:
        stale = [p for p, text in wanted.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
        stale += sorted(present - set(wanted))
        for path in stale:
            print(f"stale: {path.relative_to(ROOT)}")
        if stale:
            print("make_examples: run .venv/bin/python examples/make_examples.py", file=sys.stderr)
        return 1 if stale else 0
    for path in present - set(wanted):
        path.unlink()
    for path, text in wanted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(path.relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
