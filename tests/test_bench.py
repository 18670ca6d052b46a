"""`make bench` runs: figures 3-5 on a tiny setting write the report and its plots (no timing asserted).

Figures 1 (all four lessons under papermill) and 2 (two graders on a class of the lessons) take
minutes, not seconds, so this test skips them: it checks that the report then says "not measured"
for them, and builds the class figure 2 grades.
"""
import nbformat
import pytest

from course.bench.__main__ import render, run
from course.bench.grading import KINDS, class_lessons, make_class

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    figures = run(out, figures=(3, 4, 5), tiny=True)
    return out, {figure.number: figure for figure in figures}, (out / "report.md").read_text()


def test_figures_3_to_5_are_measured_with_plots(report):
    out, figures, text = report
    for number, plot in ((3, "overhead.png"), (4, "memory.png"), (5, "learning.png")):
        figure = figures[number]
        assert figure.not_measured == "", figure.not_measured
        assert figure.plot == plot and (out / plot).read_bytes().startswith(PNG)
        assert f"![{figure.title}]({plot})" in text
        assert figure.headline in text and "Method: " in text


def test_the_ratios_come_from_the_measurements(report):
    _, figures, _ = report
    overhead = figures[3].table
    assert [row[0] for row in overhead[1:]] == ["bare torch loop", "helpers.train_pytorch",
                                               "helpers.train_accelerate", "helpers.make_trainer (Trainer)"]
    memory = figures[4].table[1:]
    assert [row[0] for row in memory] == ["1", "2"]
    assert memory[0][3].startswith("1.00 ") and memory[0][5].startswith("1.00 ")  # N=1 against itself
    learning = figures[5].table[1:]
    assert len(learning) == 1 + 2  # before training, then twice in the epoch
    seconds = [float(row[0]) for row in learning]
    assert seconds[0] == 0.0 and seconds == sorted(seconds) and seconds[-1] > 0


def test_report_says_what_was_not_measured_and_names_the_machine(report):
    _, figures, text = report
    assert "1. **Collection**: not measured: not asked for" in text
    assert "2. **Grading**: not measured: not asked for" in text
    for key in ("nproc", "memory", "cpu", "torch", "transformers", "accelerate", "nbgrader"):
        assert f"- {key}: " in text


def test_render_lists_all_five_figures(report):
    _, figures, _ = report
    text = render(list(figures.values()), {"cpu": "x"}, {"repeats": 1}, tiny=True, seconds=1)
    missing = [n for n in range(1, 6) if f"## {n}. " not in text]
    assert not missing, f"the report has no section for figure(s) {missing}"


def test_grading_figure_class_is_generated(tmp_path):
    submissions = make_class(tmp_path)
    notebooks = sorted(submissions.glob("*/*/*.ipynb"))
    assert len(notebooks) == len(KINDS) * len(class_lessons()) >= 16
    for lesson in class_lessons():
        answers = {tuple(cell.source for cell in nbformat.read(path, as_version=4).cells)
                   for path in submissions.glob(f"*/{lesson}/{lesson}.ipynb")}
        assert len(answers) == len(KINDS), f"every student should answer {lesson} differently"
