"""Draft notebooks: text files in assignments/notebooks/ that course.toml does not list yet (no
checks, so no points). The build reads them but writes nothing; they still run top to bottom
with the reference code. Once course.toml lists one, test_notebooks.py covers it instead."""

import math
import sys

import pytest
from nbclient import NotebookClient

from nbgrader_helpers import (
    COURSE, environment, is_hidden_test, is_read_only, is_self_check, load_build_script,
)

builder = load_build_script()
DRAFTS = builder.drafts()


def test_a_draft_is_read_by_the_build_but_not_written(tmp_path, monkeypatch):
    built = builder.build_all()
    for draft in DRAFTS:
        assert draft not in COURSE.assignments
        assert not any(draft in path.parts for path in built)
    # a draft's broken `# fill:` stops the build like a listed notebook's
    for path in builder.TEXTS.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    (tmp_path / "draft.py").write_text(
        '# %% nbgrader="read-only" grade_id="given"\n# fill: solutions.transformer.no_such_name\n',
        encoding="utf-8")
    monkeypatch.setattr(builder, "TEXTS", tmp_path)
    with pytest.raises(builder.BuildError, match="no_such_name"):
        builder.build_all()


def _code(nb, grade_id):
    return next(cell.source for cell in nb.cells if cell.get("id") == grade_id)


@pytest.mark.slow
@pytest.mark.parametrize("draft", DRAFTS)
def test_draft_runs_top_to_bottom_with_the_reference(draft, tmp_path, monkeypatch):
    """In a real kernel, every cell but the hidden tests and the self-check (both need checks)."""
    monkeypatch.setenv("PATH", environment()["PATH"])  # the kernelspec starts `python` from PATH
    nb = builder.preview(draft)
    nb.cells = [cell for cell in nb.cells
                if not (cell.cell_type == "code" and (is_hidden_test(cell) or is_self_check(cell)))]
    NotebookClient(nb, timeout=300, startup_timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()  # raises on an error
    for cell in nb.cells:
        if cell.cell_type == "code" and is_read_only(cell) and cell.id.startswith("check_"):
            assert "✓" in "".join(o.get("text", "") for o in cell.outputs), cell.id
    if draft == "transformer":
        trained = "".join(o.get("text", "") for o in next(c for c in nb.cells if c.id == "train").outputs)
        assert "✓ akurasi urutan-tepat ≥ 95%" in trained, trained
        plotted = next(c for c in nb.cells if c.id == "plot_loss").outputs
        assert any("image/png" in o.get("data", {}) for o in plotted)


def test_transformer_loss_plot_falls_back_to_text_without_matplotlib(monkeypatch, capsys):
    source = _code(builder.preview("transformer"), "plot_loss")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    losses = [2.5 * 0.97 ** step for step in range(200)]
    exec(compile(source, "plot_loss", "exec"), {"math": math, "TGT_VOCAB": 11, "losses": losses,
                                                 "accuracies": [(25, 0.0), (200, 1.0)]})
    out = capsys.readouterr().out
    line = out.split("\n")[0]
    assert line.startswith("loss  2.") and "█" in line and "▁" in line, out
    assert "25: 0%" in out and "200: 100%" in out
