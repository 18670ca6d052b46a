"""Set the sizes the grader is told after a notebook's parameters cell, at grading time only.

A lesson's first cell tagged `parameters` sets its sizes (examples, batch size, epochs). The
demonstrations train with them so that students see learning; the graded tests build their own
tiny problems (helpers.exercises.tiny_problem). So the grader does what papermill does with `-p`:
it adds a cell right after the parameters cell that sets the sizes --variants gives it (the course
gives each lesson's small profile: course/lessons.py), only for the names that cell assigns (a
student who deleted one keeps the lesson's own error). The cell is tagged `injected-parameters`
and shows in the autograded notebook and the feedback, so students can see what ran.

`make bench` (figure 2) grades the same class, right and wrong answers, with and without the
sizes: the scores must agree.
"""
import ast

from nbformat.v4 import new_code_cell
from nbgrader.preprocessors.base import NbGraderPreprocessor
from traitlets import Dict

HEADER = ("# Injected by the grader: smaller sizes for the demonstration cells, so that grading is"
          "\n# fast. The graded tests build their own small problems.")


class InjectGradingParameters(NbGraderPreprocessor):
    """Add `name = source` after the notebook's `parameters` cell (nothing if it has none)."""

    parameters = Dict(help="{name: Python source} to set").tag(config=True)

    def preprocess(self, nb, resources):
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
                names = defined_names(cell.source)
                lines = [f"{name} = {source}" for name, source in self.parameters.items()
                         if name in names]
                if lines:
                    nb.cells.insert(index + 1, new_code_cell(
                        "\n".join([HEADER, *lines]), metadata={"tags": ["injected-parameters"]}))
                break
        return nb, resources


def defined_names(source):
    """Names a cell assigns at its top level (`a = 1`, `a: int = 1`, `a = b = 2`)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names
