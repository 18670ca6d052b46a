"""What a student reads from a lesson's code comes through the catalogs, in the notebook's language.

- Every message that a cell of a lesson shows a student (an assertion's message, an exception, a
  printed line) is written `helpers.message("English ...", values)`, so that it is extracted into
  helpers/locale and shown in Dutch or Indonesian; literal English would stay English there.
- So is every other text a lesson shows: a plot's title and series names are literals in the
  plot_history(...) call, and a name handed to helpers or to a message's field (a table's row, a
  hidden test's case) is a helpers.message literal, never a variable or an f-string.
- What only hidden tests write stays out of helpers/locale (which every student and kernel can
  read) and out of every release; its translations (locale/<lang>/LC_MESSAGES/hidden-tests.po)
  reach the hidden tests of the grader's source only, so a Dutch student's feedback is Dutch.
"""
import ast
import json
import re

import polib
import pytest

from course import i18n
from course.lessons import Edition
from course.paths import NOTEBOOKS, SOLUTIONS, lessons
from helpers.language import LOCALE as HELPERS_LOCALE
from helpers.language import NOT_YET_TRANSLATED

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


# Cells whose plot_history series names are built in the code, not written in the call, and need no
# translation: {cell id: why}
SAME_IN_EVERY_LANGUAGE = {"l7-curves": "the series are the dtypes' names, float32 and bfloat16"}


def unextracted_labels(source, where):
    """(line, code) of the English in `source` that the catalogs cannot extract, so that it stays
    English in nl and id with no marker: a message or a plot's title or series names that is not a
    literal (a variable, an f-string, a comprehension), and a literal of two words or more that no
    message(...) or plot_history(...) holds (a row's or a case's name handed to helpers or to a
    message's field). Docstrings and comments are not shown to a student."""
    literal = lambda node: isinstance(node, ast.Constant) and isinstance(node.value, str)  # noqa: E731
    texts = i18n.text_arguments(source, where)
    found = [(node.lineno, ast.unparse(node)) for node in texts if not literal(node)]
    tree = parsed(source)
    docstrings = [node.body[0].value for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and literal(node.body[0].value)]
    seen = {(node.lineno, node.col_offset) for node in [*texts, *docstrings]}
    found += [(node.lineno, repr(node.value)) for node in ast.walk(tree)
              if isinstance(node, ast.Constant) and isinstance(node.value, str) and PROSE.search(node.value)
              and (node.lineno, node.col_offset) not in seen]
    return sorted(set(found))


def test_labels_the_catalogs_cannot_extract_are_found():
    source = ('helpers.plot_history({"basic loop": h}, title="Lesson 1")\n'
              'helpers.plot_history({f"K = {k}": h for k, h in runs.items()}, title=f"Lesson {n}")\n'
              'helpers.plot_history(histories, "Two runs")\nhelpers.plot_history(helpers.History(loss, lr))\n'
              'print(helpers.message(text))\nhelpers.padding_table({"to max_length": 0.5})\n'
              'cases = {"a single example": 1}\n'
              'def f():\n    """A docstring."""\n    return helpers.message("Two words {name}.", name="x")\n')
    assert unextracted_labels(source, "cell") == [
        (2, "f'Lesson {n}'"), (2, "{f'K = {k}': h for k, h in runs.items()}"), (3, "histories"), (5, "text"),
        (6, "'to max_length'"), (7, "'a single example'")]


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_label_a_lesson_shows_is_one_the_catalogs_extract(lesson):
    """What a lesson names in its plots, tables and messages reaches the catalogs, or it would stay
    English in nl and id with no marker (tests/test_plots.py checks helpers' own words)."""
    left = [f"{cell_id} line {line}: {code}" for cell_id, source in code_cells(lesson)
            if cell_id not in SAME_IN_EVERY_LANGUAGE for line, code in unextracted_labels(source, cell_id)]
    assert not left, (f"{lesson}: {len(left)} texts the catalogs cannot extract; write each as a literal in "
                      "helpers.message(\"English\") or in the plot_history(...) call:\n" + "\n".join(left))


@pytest.mark.parametrize("lesson", LESSONS)
def test_every_assert_of_a_test_cell_says_what_failed(lesson):
    """A bare `assert` (hidden tests included) shows the student only the test's English source: in
    the feedback of every language, an assert in a test cell carries a message."""
    test_cells = {cell["id"] for cell in json.loads((SOLUTIONS / lesson / f"{lesson}.ipynb").read_text())["cells"]
                  if cell.get("metadata", {}).get("nbgrader", {}).get("grade")}
    bare = [f"{cell_id} line {node.lineno}" for cell_id, source in code_cells(lesson) if cell_id in test_cells
            for node in ast.walk(parsed(source)) if isinstance(node, ast.Assert) and node.msg is None]
    assert not bare, f"{lesson}: asserts without a message (add helpers.message(...)): {bare}"


def hidden_catalog(lang):
    return i18n.load(i18n.catalog_path(i18n.HIDDEN_DOMAIN, lang))


def test_hidden_tests_messages_have_their_own_catalog():
    hidden = {entry.msgid for entry in i18n.hidden_template()}
    assert "Plain SGD keeps no state: 0 bytes." in hidden            # lesson 8, hidden only
    assert "Return a TrainingArguments object, not {name}." not in hidden  # visible in lessons 4 and 5
    assert not hidden & {entry.msgid for entry in i18n.helpers_template()}
    assert i18n.HIDDEN_DOMAIN in i18n.domains()  # extracted, merged and checked like every catalog
    for lang in i18n.LANGUAGES:
        assert {entry.msgid for entry in hidden_catalog(lang) if not entry.obsolete} == hidden


def test_hidden_tests_messages_stay_out_of_the_students_catalogs():
    """helpers/locale ships with helpers: no hidden test's message in it, not even an obsolete one."""
    hidden = {entry.msgid for entry in i18n.hidden_template()}
    leaked = [f"{path.relative_to(HELPERS_LOCALE)}: {entry.msgid!r}"
              for path in sorted(HELPERS_LOCALE.rglob("*.po*")) for entry in polib.pofile(str(path))
              if entry.msgid in hidden]
    assert not leaked, f"{len(leaked)} hidden tests' messages in helpers/locale (python -m course.i18n update):\n" + (
        "\n".join(leaked[:20]))


def test_no_release_holds_a_hidden_tests_message():
    texts = {entry.msgid for entry in i18n.hidden_template()}
    texts |= {entry.msgstr for lang in i18n.LANGUAGES for entry in hidden_catalog(lang) if entry.msgstr}
    for path in sorted(NOTEBOOKS.rglob("*.ipynb")):
        notebook = json.loads(path.read_text())
        shown = "\n".join("".join(cell["source"]) for cell in notebook["cells"])
        found = [text for text in texts if text in shown]
        assert not found, f"{path.relative_to(NOTEBOOKS)}: {found[:3]}"


def test_the_graders_source_has_hidden_tests_in_the_notebooks_language(tmp_path):
    lesson = "08_optimizers"
    i18n.grading_source(tmp_path, names=[lesson])
    english = json.loads((SOLUTIONS / lesson / f"{lesson}.ipynb").read_text())
    assert json.loads((tmp_path / lesson / f"{lesson}.ipynb").read_text()) == english
    hidden = "Plain SGD keeps no state: 0 bytes."
    said = {lang: hidden_catalog(lang).find(hidden) for lang in i18n.LANGUAGES}
    said = {lang: entry.msgstr if entry.translated() else f"{hidden} {NOT_YET_TRANSLATED[lang]}"  # a new language
            for lang, entry in said.items()}
    for lang in i18n.LANGUAGES:
        translated = json.loads((tmp_path / Edition(lesson, lang).assignment / f"{lesson}.ipynb").read_text())
        for mine, theirs in zip(translated["cells"], english["cells"]):
            if mine["cell_type"] == "code" and "parameters" not in mine["metadata"].get("tags", []):
                # outside the hidden tests the code is the English code
                assert HIDDEN.sub("", i18n.cell_source(mine)) == HIDDEN.sub("", i18n.cell_source(theirs)), mine["id"]
                assert not [node.value for node in i18n.message_literals(i18n.cell_source(mine), mine["id"])
                            if node.lineno in i18n.hidden_lines(i18n.cell_source(mine))
                            and hidden_catalog(lang).find(node.value)], f"{mine['id']}: English left in {lang}"
        sources = "\n".join(i18n.cell_source(cell) for cell in translated["cells"])
        assert [other for other, text in said.items() if text in sources] == [lang], lang
        assert (hidden in sources) == said[lang].startswith(hidden), lang  # English only where not translated


def test_translate_hidden_tests_replaces_only_the_hidden_messages(tmp_path, monkeypatch):
    catalog = polib.POFile()
    catalog.append(polib.POEntry(msgid="Keep {n} × less.", msgstr="Houd {n} × minder."))
    catalog.append(polib.POEntry(msgid="Not done.", msgstr="Oud.", flags=["fuzzy"]))
    catalog.save(str(tmp_path / "hidden-tests.po"))
    monkeypatch.setattr(i18n.translate, "catalog_path", lambda domain, language: tmp_path / f"{domain}.po")
    source = ('assert a, helpers.message("Keep {n} × less.", n=1)\n### BEGIN HIDDEN TESTS\n'
              'assert b, "é" and helpers.message(\n    "Keep {n} "\n    "× less.", n=2)\n'
              'assert c, helpers.message("Not done.")\n### END HIDDEN TESTS\nprint(helpers.message("Not done."))\n')
    notebook = {"cells": [{"cell_type": "code", "id": "c", "metadata": {}, "source": source.splitlines(True)},
                          {"cell_type": "markdown", "id": "m", "metadata": {}, "source": ["Keep {n} × less."]}]}
    out = i18n.translate_hidden_tests(notebook, "nl")
    assert "".join(out["cells"][0]["source"]) == source.replace(
        '"Keep {n} "\n    "× less."', "'Houd {n} × minder.'").replace(
        'message("Not done.")\n###', "message('Not done. [nog niet vertaald]')\n###")
    assert out["cells"][1]["source"] == ["Keep {n} × less."]
