"""Feedback without hidden tests.

nbgrader 0.9's `generate_feedback` renders the autograded notebook, whose test cells were restored
with their hidden tests, so students would read them. HideHiddenTests runs before the HTML export:
- removes the `### BEGIN/END HIDDEN TESTS` regions from test cell sources;
- in a cell that had hidden tests, a failure's traceback is cut to its last line
  ("AssertionError: message"), since the traceback quotes the failing hidden line; where the
  failing line is one of the hidden tests (the traceback's frame of the test, autograde/guard.py's
  `<test grade_id>`), a line above it says so, and resources["hidden_failures"] lists the cell
  for the page's list of links (autograde/feedback_page.py);
- replaces any line of hidden-test source that shows up in any output, in any cell, with
  "[hidden test]" (a student cell could print the history of executed code), and the hidden-test
  markers themselves wherever a student's cell or output shows them (a cell that prints a file
  it read): the feedback is still written, without that text;
- with `report_path` set, appends one line per cell it changed so, for the row's detail.
Wired in for the grader's own run and, through OUT/nbgrader_config.py, for an instructor's
later `nbgrader generate_feedback` after manual grading.
"""
import re

from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests
from traitlets import Dict, Unicode

from .feedback_page import hidden_failure_note

FEEDBACK_PREPROCESSORS = ["nbgrader.preprocessors.GetGrades", "autograde.feedback.HideHiddenTests",
                          "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
                          "autograde.feedback_page.NameTestCells"]
MIN_SCRUB_LENGTH = 8
ANSI = re.compile(r"\x1b\[[0-9;]*m")
TEST_FRAME = re.compile(r"File <test [^>]*>:(\d+)")  # the frame of the test's own code (guard.run_test)


class HideHiddenTests(ClearHiddenTests):
    hidden_sources = Dict({}).tag(config=True)  # grade_id -> source with hidden tests (optional)
    report_path = Unicode("").tag(config=True)
    texts = Dict({}).tag(config=True)  # the page's texts: {language: {English: translation}}

    def preprocess(self, nb, resources):
        self._hidden_lines = hidden_lines([cell.source for cell in nb.cells]
                                          + list(self.hidden_sources.values()),
                                          self.begin_test_delimeter, self.end_test_delimeter)
        resources["hidden_failures"] = []
        resources["hidden_failure_note"] = hidden_failure_note(nb, self.texts)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        # Only the instructor's test cells hold hidden tests; a marker anywhere else is text.
        hidden = hidden_line_numbers(cell.source, self.begin_test_delimeter, self.end_test_delimeter)
        had_hidden = utils.is_grade(cell) and self._remove_hidden_test_region(cell)
        changed = False
        if not utils.is_grade(cell):  # the student's own code: only the markers go
            cell.source, changed = self._scrub_text(cell.source, self._markers())
        if cell.cell_type == "code":
            for output in cell.get("outputs", []):
                if output.output_type == "error" and (had_hidden or utils.is_grade(cell)) and (
                        had_hidden or self._mentions_hidden(output.traceback)):
                    failed_in_hidden = had_hidden and failing_line(output.traceback) in hidden
                    output.traceback = [f"{output.ename}: {output.evalue}"]
                    if failed_in_hidden:
                        output.traceback.insert(0, resources["hidden_failure_note"])
                        resources["hidden_failures"].append(cell.metadata.nbgrader.grade_id)
                changed = self._scrub(output) or changed
        if changed and self.report_path:
            with open(self.report_path, "a") as report:
                report.write(f"{cell.metadata.get('nbgrader', {}).get('grade_id') or f'cell {cell_index}'}\n")
        return cell, resources

    def _mentions_hidden(self, lines):
        return any(h in line for line in lines for h in self._hidden_lines)

    def _markers(self):
        return [self.begin_test_delimeter, self.end_test_delimeter]

    def _scrub_text(self, text, lines=None):
        """(text without hidden-test lines and markers, whether anything was removed)."""
        scrubbed = scrub(text, lines or [*self._hidden_lines, *self._markers()])
        return scrubbed, scrubbed != text

    def _scrub(self, output):
        changed = False
        for key in ("text", "evalue"):
            if key in output:
                output[key], hit = self._scrub_text(output[key])
                changed |= hit
        if "traceback" in output:
            lines = [self._scrub_text(line) for line in output.traceback]
            output.traceback = [line for line, _ in lines]
            changed |= any(hit for _, hit in lines)
        for mime, value in output.get("data", {}).items():
            if isinstance(value, str):
                output.data[mime], hit = self._scrub_text(value)
                changed |= hit
        return changed


def hidden_lines(sources, begin="BEGIN HIDDEN TESTS", end="END HIDDEN TESTS"):
    """The lines of hidden-test source in `sources` (long enough to be worth replacing)."""
    found = set()
    for source in sources:
        inside = False
        for line in source.split("\n"):
            if begin in line:
                inside = True
            elif end in line:
                inside = False
            elif inside and len(line.strip()) >= MIN_SCRUB_LENGTH:
                found.add(line.strip())
    return found


def hidden_line_numbers(source, begin="BEGIN HIDDEN TESTS", end="END HIDDEN TESTS"):
    """The numbers (from 1) of the lines of `source` inside its hidden-test regions."""
    numbers, inside = set(), False
    for number, line in enumerate(source.split("\n"), start=1):
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside:
            numbers.add(number)
    return numbers


def failing_line(traceback):
    """The line of the test cell at which a test's traceback failed (None: not in the test's code)."""
    found = TEST_FRAME.search(ANSI.sub("", "\n".join(traceback)))
    return int(found.group(1)) if found else None


def scrub(text, lines):
    """`text` with every one of `lines` (hidden-test source) replaced by "[hidden test]"."""
    for line in lines:
        text = text.replace(line, "[hidden test]")
    return text
