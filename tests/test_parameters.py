"""CI's view of a lesson: `papermill --help-notebook` lists every parameter of every lesson with its
type and its comment, as papermill's own inference reads the parameters cell (a type hint
`name: int = 8  # comment`; a line with two "=" is dropped, "Unable to parse line"). The Dutch and
Indonesian notebooks are made from these cells, so the same holds in every language."""
import ast
import json
import re
import subprocess
import sys

import pytest
from papermill.inspection import inspect_notebook

from course import i18n
from course.lessons import Edition
from course.paths import NOTEBOOKS, ROOT, SOLUTIONS, lessons

LESSONS = lessons()
LATER_LESSONS = LESSONS[LESSONS.index("04_trainer") + 1:]  # the slides cover lessons 1-4


def parameters_cell(lesson):
    path = SOLUTIONS / lesson / f"{lesson}.ipynb"
    [cell] = [cell for cell in json.loads(path.read_text())["cells"]
              if "parameters" in cell["metadata"].get("tags", [])]
    return "".join(cell["source"])


def assigned(source):
    """{name: value} of what the cell assigns (what a kernel gets), with or without a type hint."""
    names = {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            names[target.id] = ast.literal_eval(node.value)
    return names


def check_inferred(path, lesson, language="en"):
    """papermill's parameters of the notebook at `path`: those the lesson's cell assigns, each typed and explained."""
    inferred = inspect_notebook(path)
    expected = {**assigned(parameters_cell(lesson)), "course_language": language}
    assert sorted(inferred) == sorted(expected), f"papermill does not list {sorted(set(expected) - set(inferred))}"
    for name, parameter in inferred.items():
        assert parameter["inferred_type_name"] not in ("None", ""), f"{path}: {name} has no type for papermill"
        assert parameter["help"], f"{path}: {name} has no comment"
        assert ast.literal_eval(parameter["default"]) == expected[name], f"{path}: {name}'s default"


@pytest.mark.parametrize("lesson", LESSONS)
def test_papermill_lists_every_parameter_with_its_type_and_comment(lesson, tmp_path):
    assert assigned(parameters_cell(lesson))["course_language"] == "en"
    check_inferred(SOLUTIONS / lesson / f"{lesson}.ipynb", lesson)
    for language in i18n.LANGUAGES:  # the Dutch and Indonesian lesson, as course.i18n writes it
        path = tmp_path / language / f"{lesson}.ipynb"
        i18n.write_notebook(i18n.edition_notebook(Edition(lesson, language)), path)
        check_inferred(path, lesson, language)


@pytest.mark.parametrize("lesson", LESSONS)
def test_the_released_lessons_list_them_too(lesson):
    """notebooks/, notebooks/nl/ and notebooks/id/ (make release writes them from solutions/)."""
    for language in ("en", *i18n.LANGUAGES):
        path = (NOTEBOOKS if language == "en" else NOTEBOOKS / language) / lesson / f"{lesson}.ipynb"
        if path.exists():
            check_inferred(path, lesson, language)


def test_the_help_notebook_command_shows_types_and_no_unparsed_line():
    """The command a CI author runs, on the lesson whose comment papermill could not read."""
    run = subprocess.run([sys.executable, "-m", "papermill", "--help-notebook",
                          str(SOLUTIONS / "04_trainer" / "04_trainer.ipynb")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    output = run.stdout + run.stderr
    assert run.returncode == 0 and "Unable to parse" not in output and "Unknown type" not in output, output
    assert re.search(r"batch_size: int \(default 8\)\s+8: per device", output), output


@pytest.mark.parametrize("lesson", LATER_LESSONS)
def test_later_lessons_parameters_do_not_cite_the_slides(lesson):
    assert not re.search(r"\bslides?\b", parameters_cell(lesson), re.I), (
        f"{lesson}: the slides cover lessons 1-4; its parameters' comments cite them")
