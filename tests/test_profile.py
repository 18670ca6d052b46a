"""The grading sizes: a cell after the parameters cell sets each lesson's small profile
(course/lessons.py, what course.grade tells the grader), only for the names the lesson defines, and
only at grading time. (Its effect on scores: make bench, figure 2, compares every score with plain
nbgrader's at the lesson's own sizes; tests/test_autograde_lessons.py grades the solutions to full
marks with it.)"""
import nbformat
import pytest

from autograde.profile import InjectGradingParameters, defined_names
from course.grade import variants
from course.lessons import PROFILES, parameters, parameters_cell
from course.paths import SOLUTIONS, lessons

LESSONS = lessons()


def test_defined_names():
    assert defined_names("a = 1\nb: int = 2\nc = d = 3\nx.y = 4\nfor i in []: pass\n") == {"a", "b", "c", "d"}
    assert defined_names("this is not python") == set()


def test_every_lesson_has_a_profile():
    assert set(PROFILES) == set(LESSONS), "a lesson is its notebook plus one row of course/lessons.py"


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_injected_cell_follows_the_parameters_cell(lesson):
    nb = nbformat.read(SOLUTIONS / lesson / f"{lesson}.ipynb", as_version=4)
    index = nb.cells.index(parameters_cell(nb))
    own = parameters(nb.cells[index].source)
    count = len(nb.cells)
    told = variants()["assignments"][lesson]["parameters"]  # what course.grade tells the grader
    nb, _ = InjectGradingParameters(parameters=told).preprocess(nb, {})
    injected = nb.cells[index + 1]
    assert len(nb.cells) == count + 1 and injected.metadata.tags == ["injected-parameters"]
    namespace = {}
    exec(injected.source, namespace)
    expected = {name: value for name, value in PROFILES[lesson]["small"].items() if name in own}
    assert {k: v for k, v in namespace.items() if k != "__builtins__"} == expected
    assert "sizes" in expected, "the profile must shrink the training data of every lesson"
    assert all(expected["sizes"][part] <= own["sizes"][part] for part in expected["sizes"]), (
        "smaller than the lesson's own sizes, never larger")


def test_no_parameters_cell_or_empty_profile_changes_nothing():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("epochs = 3")])
    told = {"epochs": "1"}
    assert len(InjectGradingParameters(parameters=told).preprocess(nb, {})[0].cells) == 1
    nb.cells[0].metadata["tags"] = ["parameters"]
    assert len(InjectGradingParameters(parameters={}).preprocess(nb, {})[0].cells) == 1
    assert "epochs = 1" in InjectGradingParameters(parameters=told).preprocess(nb, {})[0].cells[1].source
