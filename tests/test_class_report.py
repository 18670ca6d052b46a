"""The class report's numbers on a made-up class of 10 students whose pass rates are known.

Toy assignment (tests/autograde_toy.py): test_add fails for 7 students with 4 different messages
(one of them quotes a line of the hidden test), test_mean fails for 2, test_square never.
"""
import csv
import html
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
