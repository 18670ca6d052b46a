"""`make bench` runs: figures 3-9 on a tiny setting write the report and its plots (no timing asserted).

Figures 1 (all four lessons under papermill) and 2 (two graders on a class of the lessons) take
minutes, not seconds, so this test skips them: it checks that the report then says "not measured"
for them, and builds the class figure 2 grades.
"""
import re

import nbformat
import pytest

from course.bench.__main__ import render, run
from course.bench.grading import KINDS, class_lessons, make_class
from helpers.optimizers import OPTIMIZERS

pytestmark = pytest.mark.slow

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    figures = run(out, figures=(3, 4, 5, 6, 7, 8, 9), tiny=True)
    return out, {figure.number: figure for figure in figures}, (out / "report.md").read_text()


PLOTS = {3: "overhead.png", 4: "memory.png", 5: "learning.png", 6: "checkpointing.png", 7: "precision.png",
         8: "optimizers.png", 9: "local_sgd.png"}


def test_figures_3_to_9_are_measured_with_plots(report):
    out, figures, text = report
    for number, plot in PLOTS.items():
        figure = figures[number]
        assert figure.not_measured == "", f"figure {number}: {figure.not_measured}"
        assert figure.plot == plot and (out / plot).read_bytes().startswith(PNG)
        assert f"![{figure.title}]({plot})" in text
        assert f"{number}. **{figure.title.split(':')[0]}**: {figure.headline}" in text
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


def test_technique_headlines_give_the_measured_ratios(report):
    _, figures, text = report
    checkpointing = figures[6].table  # batch sizes 4 and 8; the headline reads the last row's ratios
    assert [row[0] for row in checkpointing[1:]] == ["4", "8"]
    memory, time = checkpointing[-1][4].split()[0], checkpointing[-1][7].split()[0]
    assert f"At batch 8, training with checkpointing needs {memory}x [" in figures[6].headline
    assert f"the peak memory and {time}x [" in figures[6].headline
    precision = figures[7].table
    assert [row[0] for row in precision[1:]] == ["float32", "bfloat16"]
    ratio = float(precision[2][2].split()[0])
    assert f"a forward and backward pass in bfloat16 takes {ratio:.2f}x [" in figures[7].headline
    speed = "(slower)" if ratio > 1.1 else "(faster)" if ratio < 0.9 else "(about as long)"
    assert speed in figures[7].headline


def test_optimizer_bytes_are_measured_per_optimizer(report):
    _, figures, _ = report
    rows = {row[0]: row for row in figures[8].table[1:]}
    assert list(rows) == list(OPTIMIZERS)
    adamw = float(rows["adamw"][2])
    assert 8.0 <= adamw < 8.01, f"AdamW keeps two float32 moments (8 B) and a step per tensor, not {adamw}"
    assert float(rows["adafactor"][2]) < 1.0, "Adafactor factors the second moment of a matrix"
    eight_bit = rows["adamw_8bit"]
    assert eight_bit[1].startswith("not measured: ") or 2.0 <= float(eight_bit[2]) < 2.2, eight_bit
    assert "adamw 8.00 B (1.00x AdamW); adafactor 0.0" in figures[8].headline


def test_local_sgd_counts_the_synchronisations(report):
    _, figures, _ = report
    # tiny: 2 processes, 32 pairs in batches of 4: 4 optimizer steps each; K=2 averages after 2, 4 and at the end
    rows = figures[9].table[1:]
    assert [row[:4] for row in rows] == [["data parallel", "4", "4", "1"], ["2", "4", "3", "1.33x"]]
    headline = figures[9].headline
    assert f"K=2 1.33x; final training loss against data parallel's {rows[0][4]}: K=2 " in headline
    final = float(re.search(r"loss .*: K=2 ([0-9.]+)x", headline).group(1))
    assert abs(final - float(rows[1][5])) < 0.006, "the headline's loss ratio is not the table's"


def test_report_says_what_was_not_measured_and_names_the_machine(report):
    _, figures, text = report
    assert "1. **Collection**: not measured: not asked for" in text
    assert "2. **Grading**: not measured: not asked for" in text
    for key in ("nproc", "memory", "cpu", "torch", "transformers", "accelerate", "nbgrader"):
        assert f"- {key}: " in text


def test_render_lists_all_nine_figures(report):
    _, figures, _ = report
    text = render(list(figures.values()), {"cpu": "x"}, {"repeats": 1}, tiny=True, seconds=1)
    missing = [n for n in range(1, 10) if f"## {n}. " not in text]
    assert not missing, f"the report has no section for figure(s) {missing}"


def test_grading_figure_class_is_generated(tmp_path):
    submissions = make_class(tmp_path)
    notebooks = sorted(submissions.glob("*/*/*.ipynb"))
    assert len(notebooks) == len(KINDS) * len(class_lessons()) >= 16
    for lesson in class_lessons():
        answers = {tuple(cell.source for cell in nbformat.read(path, as_version=4).cells)
                   for path in submissions.glob(f"*/{lesson}/{lesson}.ipynb")}
        assert len(answers) == len(KINDS), f"every student should answer {lesson} differently"


def test_grading_cpu_counts_what_outlives_the_command():
    """The grader's forkserver, parent of the workers and kernels, outlives the grader: its CPU
    must count. Here a grandchild that burns about a second after its parent exited."""
    import sys

    from course.bench.grading import _measured
    burn = "import time\nend = time.process_time() + 1\nwhile time.process_time() < end: pass"
    orphan = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {burn!r}])"
    wall, cpu = _measured([sys.executable, "-c", orphan], env=None)
    assert cpu >= 1.0, f"only {cpu:.2f} CPU s counted: the orphan's second was lost"
