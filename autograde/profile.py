"""The grading profile: smaller sizes for a lesson's demonstration cells, at grading time only.

A lesson's first cell tagged `parameters` sets its sizes (examples, batch size, epochs). The
demonstrations train with them so that students see learning; the graded tests build their own
tiny problems (helpers.exercises.tiny_problem) and only a few read a size, such as
l2-test-processes, which trains on the first 10 * batch_size examples. So the grader does what
papermill does with `-p`: it adds a cell right after the parameters cell that sets smaller
values, and only for the names that cell defines. The cell is tagged `injected-parameters`
and shows in the autograded notebook and the feedback, so students can see what ran.

`make bench` (figure 2) grades the same class, right and wrong answers, with and without the
profile: the scores must agree.
"""
import ast

from nbformat.v4 import new_code_cell
from nbgrader.preprocessors.base import NbGraderPreprocessor
from traitlets import Dict

# At least 10 * batch_size training examples (l2-test-processes), 16 (l3-equal), and
# memory_batch divisible by 4 (lesson 3's micro-batches of memory_batch / 4, / 2, / 1). The
# measurements of lessons 5 to 7 take one timing round, one batch size and one K.
GRADING_PARAMETERS = {"sizes": {"train": 80, "validation": 16, "test": 8}, "batch_size": 8,
                      "epochs": 1, "memory_batch": 8, "memory_batch_sizes": [8], "repeats": 1,
                      "local_sgd_steps": (2,)}
HEADER = ("# Injected by the grader: smaller sizes for the demonstration cells, so that grading is"
          "\n# fast. The graded tests build their own small problems.")


class InjectGradingParameters(NbGraderPreprocessor):
    """Add the profile's values after the notebook's `parameters` cell (nothing if it has none)."""

    parameters = Dict(GRADING_PARAMETERS).tag(config=True)

    def preprocess(self, nb, resources):
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and "parameters" in cell.metadata.get("tags", []):
                names = defined_names(cell.source)
                lines = [f"{name} = {value!r}" for name, value in self.parameters.items()
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
