"""The English to translate, read from the source: one template per domain (course/i18n/catalogs.py).

- A lesson's template: one entry per markdown Unit (course/i18n/markdown.py), msgctxt = the cell's id.
- helpers' template: every `message("...")` in helpers/, in the feedback page and in the lessons'
  code cells, and the title and series names given to `plot_history` (text_arguments).
- The hidden tests' template: what only the lines between `### BEGIN HIDDEN TESTS` and
  `### END HIDDEN TESTS` write, kept out of helpers/locale, which every student can read.
A message written otherwise (a variable, an f-string) cannot be extracted and stays English.
"""
import ast
import json
import re
import string
from pathlib import Path

import polib

from ..paths import ROOT, SOLUTIONS, lessons
from .catalogs import new_catalog
from .markdown import units

FEEDBACK_PAGE = ROOT / "autograde" / "feedback_page.py"  # what the grader's feedback page adds
HIDDEN_TESTS = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS", re.S | re.M)


def notebook_cells(path):
    return json.loads(Path(path).read_text())["cells"]


def cell_source(cell):
    """A cell's source as one string (nbformat stores it as a list of lines or as a string)."""
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def lesson_template(lesson, source=SOLUTIONS):
    """The template of one lesson: one entry per markdown Unit, msgctxt = the cell's id."""
    path = Path(source) / lesson / f"{lesson}.ipynb"
    catalog, entries = new_catalog(), {}
    for cell in notebook_cells(path):
        if cell["cell_type"] != "markdown":
            continue
        for unit in units(cell_source(cell)):
            key = (cell["id"], unit.msgid)
            if key not in entries:
                entries[key] = polib.POEntry(msgctxt=cell["id"], msgid=unit.msgid, msgstr="",
                                             occurrences=[(f"{lesson}.ipynb#{cell['id']}", "")])
                catalog.append(entries[key])
    return catalog


def _messages_in(code, where):
    """(English, line) of each message("...") call in `code`, and of plot_history's title and labels."""
    return sorted(((text.value, text.lineno) for text in message_literals(code, where)),
                  key=lambda text_line: text_line[1])


def message_literals(code, where):
    """The string constants (ast nodes) that _messages_in reads: the text_arguments written as literals."""
    return [text for text in text_arguments(code, where)
            if isinstance(text, ast.Constant) and isinstance(text.value, str)]


def text_arguments(code, where):
    """The ast nodes of `code` that give a student text: the first argument of each message(...), and
    plot_history's title and series names (the keys of a dict written in the call; a History(...)
    has none). A node that is not a string literal (a variable, an f-string, a comprehension) is
    text the catalogs cannot extract: it stays English in every language."""
    magic = ("%", "!")  # IPython's magics and shell lines are not Python
    tree = ast.parse("\n".join("pass" if line.startswith(magic) else line for line in code.splitlines()),
                     filename=where)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        if name == "message" and node.args:
            found.append(node.args[0])
        elif name == "plot_history":
            found += [keyword.value for keyword in node.keywords if keyword.arg == "title"] + node.args[1:2]
            series = node.args[0] if node.args else None
            if isinstance(series, ast.Dict):
                found += [series if key is None else key for key in series.keys]  # None: a **mapping
            elif series is not None and not (isinstance(series, ast.Call) and _name(series.func) == "History"):
                found.append(series)
    return found


def _name(function):
    return getattr(function, "id", None) or getattr(function, "attr", None)


def hidden_lines(code):
    """The numbers (from 1) of the lines between `### BEGIN HIDDEN TESTS` and `### END HIDDEN TESTS`."""
    return {number for match in HIDDEN_TESTS.finditer(code)
            for number in range(code.count("\n", 0, match.start()) + 2, code.count("\n", 0, match.end()) + 1)}


def _lessons_messages(source, hidden):
    """[(message, "<lesson>.ipynb#<cell>")] of the lessons' code cells: those their hidden tests
    write (`hidden`) or the others."""
    found = []
    for lesson in lessons(source):
        for cell in notebook_cells(Path(source) / lesson / f"{lesson}.ipynb"):
            if cell["cell_type"] == "code":
                where, code = f"{lesson}.ipynb#{cell['id']}", cell_source(cell)
                in_hidden = hidden_lines(code)
                found += [(text, where) for text, line in _messages_in(code, where) if (line in in_hidden) == hidden]
    return found


def helpers_template(source=SOLUTIONS):
    """The template of what helpers, the lessons' code cells and the feedback page show a student."""
    found = []
    for path in [*sorted((ROOT / "helpers").glob("*.py")), FEEDBACK_PAGE]:
        found += [(text, path.relative_to(ROOT).as_posix()) for text, _ in _messages_in(path.read_text(), str(path))]
    # what hidden tests alone write is not for students' eyes
    return _messages_catalog(found + _lessons_messages(source, hidden=False))


def hidden_template(source=SOLUTIONS):
    """The template of the messages that only the lessons' hidden tests write (the grader's)."""
    public = {entry.msgid for entry in helpers_template(source)}
    return _messages_catalog([(text, where) for text, where in _lessons_messages(source, hidden=True)
                              if text not in public])


def _messages_catalog(found):
    """A catalog of [(message, where it is written)]. An entry names its files and cells, not their
    lines: an edit that moves a message leaves the catalogs as they are."""
    catalog, entries = new_catalog(), {}
    for text, where in found:
        if text not in entries:
            flags = ["python-brace-format"] if placeholders(text) else []
            entries[text] = polib.POEntry(msgid=text, msgstr="", flags=flags)
            catalog.append(entries[text])
        if (where, "") not in entries[text].occurrences:
            entries[text].occurrences.append((where, ""))
    return catalog


def placeholders(text):
    """The str.format fields of a message, e.g. {'calls', 'steps:.3g'}."""
    try:
        return {f"{name}:{spec}" if spec else name
                for _, name, spec, _ in string.Formatter().parse(text) if name is not None}
    except ValueError:
        return {"<not a format string>"}
