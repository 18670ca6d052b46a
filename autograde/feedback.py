"""Feedback without hidden tests.

nbgrader 0.9's `generate_feedback` renders the autograded notebook, whose test cells were restored
with their hidden tests, so students would read them. HideHiddenTests runs before the HTML export:
- removes the `### BEGIN/END HIDDEN TESTS` regions from test cell sources;
- in a cell that had hidden tests, a failure's traceback is cut to its last line
  ("AssertionError: message"), since the traceback quotes the failing hidden line;
- replaces any line of hidden-test source that shows up in any output, in any cell, with
  "[hidden test]" (a student cell could print the history of executed code).
Wired in for the grader's own run and, through OUT/nbgrader_config.py, for an instructor's
later `nbgrader generate_feedback` after manual grading.
"""
from nbgrader import utils
from nbgrader.preprocessors import ClearHiddenTests
from traitlets import Dict

FEEDBACK_PREPROCESSORS = ["nbgrader.preprocessors.GetGrades", "autograde.feedback.HideHiddenTests",
                          "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor"]
MIN_SCRUB_LENGTH = 8


class HideHiddenTests(ClearHiddenTests):
    hidden_sources = Dict({}).tag(config=True)  # grade_id -> source with hidden tests (optional)

    def preprocess(self, nb, resources):
        self._hidden_lines = hidden_lines([cell.source for cell in nb.cells]
                                          + list(self.hidden_sources.values()),
                                          self.begin_test_delimeter, self.end_test_delimeter)
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        had_hidden = self._remove_hidden_test_region(cell)
        if cell.cell_type == "code":
            for output in cell.get("outputs", []):
                if output.output_type == "error" and (had_hidden or utils.is_grade(cell)) and (
                        had_hidden or self._mentions_hidden(output.traceback)):
                    output.traceback = [f"{output.ename}: {output.evalue}"]
                self._scrub(output)
        return cell, resources

    def _mentions_hidden(self, lines):
        return any(h in line for line in lines for h in self._hidden_lines)

    def _scrub_text(self, text):
        return scrub(text, self._hidden_lines)

    def _scrub(self, output):
        if "text" in output:
            output.text = self._scrub_text(output.text)
        if "traceback" in output:
            output.traceback = [self._scrub_text(line) for line in output.traceback]
        if "evalue" in output:
            output.evalue = self._scrub_text(output.evalue)
        for mime, value in output.get("data", {}).items():
            if isinstance(value, str):
                output.data[mime] = self._scrub_text(value)


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


def scrub(text, lines):
    """`text` with every one of `lines` (hidden-test source) replaced by "[hidden test]"."""
    for line in lines:
        if line in text:
            text = text.replace(line, "[hidden test]")
    return text
