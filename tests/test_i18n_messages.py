"""What a student reads from a lesson's code comes through the catalogs, in the notebook's language.

- Every message that a cell of a lesson shows a student (an assertion's message, an exception, a
  printed line) is written `helpers.message("English ...", values)`, so that it is extracted into
  helpers/locale and shown in Dutch or Indonesian; literal English would stay English there.
"""
import ast
import json
import re

import pytest

from course.paths import SOLUTIONS, lessons

LESSONS = lessons()
HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*$", re.S | re.M)
PROSE = re.compile(r"[A-Za-z]+ +[A-Za-z]+")   # two words in a row: English, not a name or a code token


def code_cells(lesson):
    path = SOLUTIONS / lesson / f"{lesson}.ipynb"
    return [(cell["id"], "".join(cell["source"])) for cell in json.loads(path.read_text())["cells"]
            if cell["cell_type"] == "code"]


def parsed(source):
    """The cell as Python: IPython's magics and shell lines become `pass`, line numbers stay."""
    return ast.parse("\n".join("pass" if line.lstrip().startswith(("%", "!")) else line
                               for line in source.splitlines()))


def english_literals(node):
    """(line, text) of English written into `node` itself: a string or f-string, or one that is
    .format()-ed, but not text inside a call (message's first argument, or another function's)."""
    if isinstance(node, ast.JoinedStr):
        text = "".join(part.value for part in node.values if isinstance(part, ast.Constant))
        return [(node.lineno, text)] if PROSE.search(text) else []
    if isinstance(node, ast.Constant):
        return [(node.lineno, node.value)] if isinstance(node.value, str) and PROSE.search(node.value) else []
    if isinstance(node, ast.Call):
        return english_literals(node.func.value) if isinstance(node.func, ast.Attribute) else []
    if isinstance(node, (ast.Subscript, ast.Name, ast.Attribute)):
        return []
    return [found for child in ast.iter_child_nodes(node) for found in english_literals(child)]


def literal_messages(source):
    """(line, text) of each message in `source` that a student would read in English whatever the
    language: what an assert, a raise or a print shows, written as a literal."""
    found = []
    for node in ast.walk(parsed(source)):
        if isinstance(node, ast.Assert) and node.msg is not None:
            found += english_literals(node.msg)
        elif isinstance(node, ast.Raise) and node.exc is not None:
            found += [hit for argument in getattr(node.exc, "args", [node.exc]) for hit in english_literals(argument)]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
            found += [hit for argument in node.args for hit in english_literals(argument)]
    return sorted(found)


def visible(source):
    """The source without its hidden tests (the lines stay, empty, so that line numbers hold)."""
    return HIDDEN.sub(lambda match: "\n" * match.group(0).count("\n"), source)


def test_literal_messages_are_found():
    source = ('assert x, f"x is {x}; it should be 1."\nassert y, helpers.message("Fine {y}.", y=y)\n'
              'print("Correct: well done.")\nprint(helpers.message("Correct: {n} steps.", n=3))\n'
              'raise AssertionError("Never seen here.")\nprint(f"optim={name!r} -> {kind}")\n'
              'assert z, "Call it {n} times.".format(n=2)\nassert w, helpers.slides.source("pytorch loop")\n'
              '### BEGIN HIDDEN TESTS\nassert v, "Hidden text."\n### END HIDDEN TESTS\n')
    assert literal_messages(visible(source)) == [(1, "x is ; it should be 1."), (3, "Correct: well done."),
                                                 (5, "Never seen here."), (7, "Call it {n} times.")]
    assert (10, "Hidden text.") in literal_messages(source)


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_message_a_student_reads_goes_through_the_catalogs(lesson):
    """A lesson's cells (solutions included, hidden tests apart) write messages with helpers.message."""
    literal = [f"{cell_id} line {line}: {text!r}" for cell_id, source in code_cells(lesson)
               for line, text in literal_messages(visible(source))]
    assert not literal, (f"{lesson}: {len(literal)} messages in literal English; write them "
                         "helpers.message(\"English {field}\", field=...):\n" + "\n".join(literal))
