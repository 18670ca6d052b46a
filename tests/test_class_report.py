"""The class report's numbers on a made-up class of 10 students whose pass rates are known, and
its parts on made-up blocks and notebooks (no grading, no gradebook).

Toy assignment (tests/autograde_toy.py): test_add fails for 7 students with 4 different messages
(one of them quotes a line of the hidden test), test_mean fails for 2, test_square never. The
made-up class is an OUT folder that course/bench/graded_class.py writes without running a
kernel: nbgrader's release and gradebook, the autograded notebooks, grades.csv and timings.csv.
(A lesson across languages: test_autograde_modules.py.)
"""
import csv
import html
import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest

from autograde import class_report
from autograde_toy import HIDDEN_MARKERS, write_source
from course.bench.graded_class import graded_class

HIDDEN_LINE = "assert add(10, -4) == 6  # HIDDEN-MARKER-ADD"  # from the toy's hidden test
ADD_MESSAGES = {0: "add(1, 2) gave -1", 1: "add(1, 2) gave -1", 2: "add(1, 2) gave -1",
                3: HIDDEN_LINE, 4: HIDDEN_LINE, 5: "add is not defined", 6: "add returned None"}
MEAN_FAILS = {0: "mean([1, 2, 3]) gave 0.0", 7: "mean([1, 2, 3]) gave 0.0"}
POINTS = {"test_add": 2, "test_mean": 3, "test_square": 1}


def fails(student, grade_id):
    return {"test_add": ADD_MESSAGES, "test_mean": MEAN_FAILS}.get(grade_id, {}).get(student)


@pytest.fixture(scope="module")
def out():
    root = Path(tempfile.mkdtemp(prefix="class-report-test-"))
    out = graded_class(write_source(root / "source"), root / "out", students=10, fails=fails)
    class_report.write(out)
    yield out
    shutil.rmtree(root, ignore_errors=True)


def markdown_rows(text):
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
            for line in text.splitlines() if line.startswith("| ")]


def test_pass_rates_and_top_three_messages(out):
    rows = {row[0]: row for row in markdown_rows((out / "report.md").read_text())}
    assert rows["test_add"][1] == "3/10 (30 %)"
    assert rows["test_add"][2] == ("(3) AssertionError: add(1, 2) gave -1; (2) AssertionError: "
                                   "[hidden test]; (1) AssertionError: add is not defined")
    assert rows["test_mean"][1:] == ["8/10 (80 %)", "(2) AssertionError: mean([1, 2, 3]) gave 0.0"]
    assert rows["test_square"][1:] == ["10/10 (100 %)", ""]
    assert rows["graded"] == ["graded", "10"]


def test_no_hidden_test_source_in_the_report(out):
    for name in ("report.md", "report.html"):
        text = html.unescape((out / name).read_text())
        for marker in HIDDEN_MARKERS:
            assert marker not in text, f"{name} shows the hidden test ({marker})"


def test_html_has_the_same_content_as_markdown(out):
    page = html.unescape((out / "report.html").read_text())
    for row in markdown_rows((out / "report.md").read_text()):
        for cell in row:
            assert cell.replace("\\|", "|") in page
    for png in sorted(out.glob("report_*.png")):
        assert f"src='{png.name}'" in page and png.read_bytes().startswith(b"\x89PNG")
    assert (out / "report_toy.png").exists()


def test_wide_csv_has_one_row_per_student_and_a_total(out):
    with open(out / "grades_wide.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["student_id", "toy", "total"] and len(rows) == 10
    expected = {i: sum(POINTS.values()) - 2 * (i in ADD_MESSAGES) - 3 * (i in MEAN_FAILS)
                for i in range(10)}
    assert {row["student_id"]: float(row["total"]) for row in rows} == {
        f"student{i:03d}": float(total) for i, total in expected.items()}
    assert all(row["toy"] == row["total"] for row in rows)


def test_slowest_submissions_are_listed(out):
    text = (out / "report.md").read_text()
    slowest = text.split("## Slowest submissions")[1]
    assert markdown_rows(slowest)[1][2] == "16.0"  # timings are 10 + index % 7 s


# ---- its parts, on made-up blocks and notebooks ----

BLOCKS = [("h1", "Class report"), ("h2", "01_loop"), ("img", "report_01_loop.png", "01_loop scores"),
          ("table", [["test cell", "messages"], ["test", "a | b <c>"]]), ("p", "end & more")]


def test_the_markdown_report_escapes_a_pipe_in_a_message():
    assert class_report.to_markdown(BLOCKS) == (
        "# Class report\n\n## 01_loop\n\n![01_loop scores](report_01_loop.png)\n\n"
        "| test cell | messages |\n|---|---|\n| test | a \\| b <c> |\n\nend & more\n")


def test_the_html_report_escapes_what_a_student_wrote():
    page = class_report.to_html(BLOCKS)
    assert "<td>a | b &lt;c&gt;</td>" in page and "<p>end &amp; more</p>" in page
    assert "<img src='report_01_loop.png' alt='01_loop scores'>" in page
    assert "<tr><th>test cell</th><th>messages</th></tr>" in page


def autograded(path, outputs):
    """An autograded notebook with one test cell, `test_add`, holding `outputs`."""
    path.write_text(json.dumps({"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# Toy"},
        {"cell_type": "code", "metadata": {"nbgrader": {"grade_id": "test_add"}}, "source": "", "outputs": outputs}]}))
    return path


def test_a_failure_message_is_the_errors_last_line_without_the_hidden_test(tmp_path):
    error = {"output_type": "error", "ename": "AssertionError", "evalue": HIDDEN_LINE, "traceback": ["..."]}
    messages = class_report._messages(autograded(tmp_path / "toy.ipynb", [error]), {HIDDEN_LINE}, "graded")
    assert messages == {"test_add": "AssertionError: [hidden test]"}


def test_without_an_error_the_message_is_the_graders_note(tmp_path):
    note = {"output_type": "stream", "name": "stdout", "text": "first\n[grader] not run:   the kernel   died\n"}
    assert class_report._messages(autograded(tmp_path / "a.ipynb", [note]), set(), "graded") == {
        "test_add": "[grader] not run: the kernel died"}  # the last line, its spaces folded
    assert class_report._messages(autograded(tmp_path / "b.ipynb", []), set(), "graded") == {
        "test_add": "no error shown"}


def test_a_long_message_is_cut_and_a_missing_notebook_says_its_status(tmp_path):
    error = {"output_type": "error", "ename": "ValueError", "evalue": "x" * 500, "traceback": []}
    [message] = class_report._messages(autograded(tmp_path / "toy.ipynb", [error]), set(), "graded").values()
    assert len(message) == class_report.MESSAGE_CHARS and message.startswith("ValueError: xxx")
    assert class_report._messages(tmp_path / "nowhere.ipynb", set(), "timeout")["test_add"] == "not graded (timeout)"


def test_a_pass_rate_is_a_count_and_a_share():
    assert [class_report._rate(passed, total) for passed, total in ((2, 3), (0, 4), (0, 0))] == [
        "2/3 (67 %)", "0/4 (0 %)", ""]
