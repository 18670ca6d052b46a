"""The grading profile: a cell after the parameters cell sets smaller values, only for the names
the lesson defines, and only at grading time. (Its effect on scores: make bench, figure 2,
compares every score with plain nbgrader's at the lesson's own sizes; tests/
test_autograde_lessons.py grades the solutions to full marks with it.)"""
import nbformat
import pytest

from autograde.profile import GRADING_PARAMETERS, InjectGradingParameters, defined_names
from course.paths import ROOT as REPO

LESSONS = sorted(p.name for p in (REPO / "solutions").iterdir() if (p / f"{p.name}.ipynb").exists())


def test_defined_names():
    assert defined_names("a = 1\nb: int = 2\nc = d = 3\nx.y = 4\nfor i in []: pass\n") == {"a", "b", "c", "d"}
    assert defined_names("this is not python") == set()


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_injected_cell_follows_the_parameters_cell(lesson):
    nb = nbformat.read(REPO / "solutions" / lesson / f"{lesson}.ipynb", as_version=4)
    index = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    names = defined_names(nb.cells[index].source)
    count = len(nb.cells)
    nb, _ = InjectGradingParameters().preprocess(nb, {})
    injected = nb.cells[index + 1]
    assert len(nb.cells) == count + 1 and injected.metadata.tags == ["injected-parameters"]
    namespace = {}
    exec(injected.source, namespace)
    expected = {name: value for name, value in GRADING_PARAMETERS.items() if name in names}
    assert {k: v for k, v in namespace.items() if k != "__builtins__"} == expected
    assert "sizes" in expected, "the profile must shrink the training data of every lesson"


def test_no_parameters_cell_or_empty_profile_changes_nothing():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("epochs = 3")])
    assert len(InjectGradingParameters().preprocess(nb, {})[0].cells) == 1
    nb.cells[0].metadata["tags"] = ["parameters"]
    assert len(InjectGradingParameters(parameters={}).preprocess(nb, {})[0].cells) == 1
    assert "epochs = 1" in InjectGradingParameters().preprocess(nb, {})[0].cells[1].source
