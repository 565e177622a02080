"""nbgrader's feedback page without the network: the kit's ReadableFeedback turns the notebook's
math into text (nbgrader's page loads MathJax from a CDN; offline every formula showed as raw
LaTeX), through nbconvert's real HTML exporter with nbgrader's feedback template."""

import re

import nbformat
import pytest
from nbconvert.exporters import HTMLExporter
from traitlets.config import Config

from autograder.nbgrader.feedback import ReadableFeedback, markdown_math_as_text, math_text
from nbgrader_helpers import ASSIGNMENTS, read_notebook, source_notebook


@pytest.mark.parametrize("latex, text", [
    (r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V",
     "Attention(Q, K, V) = softmax(QK<sup>⊤</sup>/√d<sub>k</sub>)V"),
    (r"d_k = \frac{d_\text{model}}{h},", "d<sub>k</sub> = d<sub>model</sub>/h,"),
    (r"\mathrm{GELU}(x) = x\,\Phi(x) = \tfrac12 x\,(1 + \mathrm{erf}(x/\sqrt2))",
     "GELU(x) = x Φ(x) = 1/2 x (1 + erf(x/√2))"),
    (r"\sin\!\left(\frac{pos}{10000^{2i/d_\text{model}}}\right)",
     "sin(pos/(10000<sup>2i/d<sub>model</sub></sup>))"),
    (r"x \in \mathbb{R}^{d}, \unknowncommand", "x ∈ ℝ<sup>d</sup>, unknowncommand"),
    (r"a < b", "a &lt; b"),
])
def test_math_as_text(latex, text):
    assert math_text(latex) == text


def test_dollars_that_are_not_math_stay():
    assert markdown_math_as_text("costs $5 and $6") == "costs $5 and $6"
    assert markdown_math_as_text(r"with $d_k$ and $x_1*y$") == \
        'with <i class="math">d<sub>k</sub></i> and <i class="math">x<sub>1</sub>&#42;y</i>'


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_formula_of_a_notebook_is_left_for_mathjax(assignment):
    nb = read_notebook(source_notebook(assignment))
    has_math = any("$" in c.source for c in nb.cells if c.cell_type == "markdown")
    config = Config()
    config.HTMLExporter.preprocessors = [ReadableFeedback]
    body, _ = HTMLExporter(config=config).from_notebook_node(nb)
    prose = body.split("</script>")[-1]
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            assert "$" not in markdown_math_as_text(cell.source).replace("$5", ""), cell.source
    assert not re.search(r"\\(frac|sqrt|mathrm|text)\b", prose)
    assert "<sub>" in prose or not has_math
