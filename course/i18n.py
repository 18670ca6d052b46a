"""The course in English, Dutch and Indonesian from one source: gettext catalogs for solutions/.

    python -m course.i18n update     # re-extract the English, merge it into the nl and id catalogs
    python -m course.i18n stats      # per catalog: entries, translated, fuzzy, untranslated
    python -m course.i18n preview [--language nl]   # the solutions as a student of nl/id reads them
    python -m course.i18n grading-source            # build/i18n/source: autograde --source for a mixed class

English in solutions/ is the only source. Every markdown paragraph (a heading, a list item, a
table row and a code fence each on its own) becomes one entry of locale/templates/<lesson>.pot,
with the cell's id as msgctxt. Every `message("...")` in helpers/ and in the lessons' code, and
the titles and series names given to `plot_history`, become entries of
helpers/locale/templates/helpers.pot, except the messages only hidden tests write: those go to
locale/templates/hidden-tests.pot, beside the grading source, since helpers/locale ships with
helpers to every student and kernel. `grading-source` writes them into the hidden tests of the
Dutch and Indonesian assignments (translate_hidden_tests); a release has no hidden tests.
`update` merges each template into the nl and id catalogs as msgmerge does: an entry whose English
changed turns fuzzy (it keeps the old translation and the old English as `#| msgid`), a new
paragraph is untranslated, a removed one obsolete.
A fuzzy or untranslated entry is shown in English with a "not yet translated" marker.
"""
import argparse
import ast
import difflib
import json
import re
import shutil
import string
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import polib

from autograde.assignments import assignment
from helpers.language import LANGUAGE_NAMES, NOT_YET_TRANSLATED, TRANSLATED
from helpers.language import LOCALE as HELPERS_LOCALE

from .paths import LOCALE, ROOT, SOLUTIONS, lessons

LANGUAGES = TRANSLATED        # translated; English is the source (helpers/language.py lists them)
HELPERS_DOMAIN = "helpers"
HIDDEN_DOMAIN = "hidden-tests"  # messages of the hidden tests: read by the grader only, never released
FEEDBACK_PAGE = ROOT / "autograde" / "feedback_page.py"  # what the grader's feedback page adds
WRAP = 100                    # line width of the .po files
HEADER = {"Project-Id-Version": "efficient-training-course", "MIME-Version": "1.0",
          "Content-Type": "text/plain; charset=UTF-8", "Content-Transfer-Encoding": "8bit"}

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6}\s+)(.*)$")
LIST_ITEM = re.compile(r"^(\s*(?:[-*+]|\d+[.)])\s+)(.*)$")
TABLE_RULE = re.compile(r"^\s*\|?[\s:|-]*-[\s:|-]*\|?\s*$")
CODE_SPAN = re.compile(r"`[^`]+`")
COMMENT = re.compile(r"\s*#.*$")                # a comment in a code fence (Python, shell)
HTML_TAG = re.compile(r"</?[a-z]+[^>]*>")
TAGS_ONLY = re.compile(r"^\s*(</?[a-z]+[^>]*>\s*)+$")  # a line of markup and no words (a hint's </details>)
LANGUAGE_SETTING = re.compile(r'^(course_language\s*(?::\s*\w+\s*)?=\s*)"en"', re.M)  # with a type hint or not
HIDDEN_TESTS = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS", re.S | re.M)


# ---- markdown: paragraphs in, paragraphs out -------------------------------------------------

@dataclass(frozen=True)
class Unit:
    """One translatable piece of a markdown cell, as written in the source."""
    kind: str   # "heading", "item", "paragraph", "row" or "code"
    text: str

    @property
    def msgid(self):
        """Prose is compared without its line breaks (rewrapping is no change); code and rows as written."""
        return self.text if self.kind in ("code", "row") else " ".join(self.text.split())


def _starts_block(line):
    return bool(FENCE.match(line) or HEADING.match(line) or LIST_ITEM.match(line)
                or line.lstrip().startswith("|"))


def segments(markdown):
    """The cell as a list of literal strings and Units; joining their texts gives `markdown` back."""
    lines = markdown.splitlines(keepends=True)
    parts, index = [], 0

    def add_unit(kind, block_lines):
        text = "".join(block_lines)
        body = text.rstrip("\n")
        parts.append(Unit(kind, body))
        if text != body:
            parts.append(text[len(body):])

    while index < len(lines):
        line = lines[index]
        if not line.strip() or TABLE_RULE.match(line) and line.strip().startswith("|") or TAGS_ONLY.match(line):
            parts.append(line)
            index += 1
        elif FENCE.match(line):
            fence, end = FENCE.match(line).group(1), index + 1
            while end < len(lines) and not lines[end].lstrip().startswith(fence):
                end += 1
            add_unit("code", lines[index:end + 1])
            index = end + 1
        elif HEADING.match(line):
            prefix = HEADING.match(line).group(1)
            parts.append(prefix)
            add_unit("heading", [line[len(prefix):]])
            index += 1
        elif line.lstrip().startswith("|"):
            add_unit("row", [line])
            index += 1
        else:
            match = LIST_ITEM.match(line)
            prefix = match.group(1) if match else line[:len(line) - len(line.lstrip())]
            end = index + 1
            while end < len(lines) and lines[end].strip() and not _starts_block(lines[end]):
                end += 1
            parts.append(prefix)
            add_unit("item" if match else "paragraph", [line[len(prefix):], *lines[index + 1:end]])
            index = end
    return parts


def render_markdown(markdown, translations, marker):
    """`markdown` with each Unit replaced by its translation; a Unit without one stays English + marker."""
    out = []
    for part in segments(markdown):
        if isinstance(part, str):
            out.append(part)
        elif translations.get(part.msgid):
            out.append(translations[part.msgid])
        elif part.kind == "code":
            out.append(f"{part.text}\n*{marker}*")
        elif part.kind == "row":
            out.append(f"{part.text.rstrip().removesuffix('|').rstrip()} *{marker}* |")
        else:
            out.append(f"{part.text} *{marker}*")
    return "".join(out)


# ---- extraction -------------------------------------------------------------------------------

def _catalog(language=None):
    catalog = polib.POFile(wrapwidth=WRAP)
    catalog.metadata = dict(HEADER, **({"Language": language} if language else {}))
    catalog.header = (f"{LANGUAGE_NAMES[language]} translation of the course. Write only msgstr; the English comes "
                      "from solutions/\nthrough `make release` (python -m course.i18n update). See README."
                      if language else "Generated from solutions/ by `python -m course.i18n update`: do not edit.")
    return catalog


def _cells(notebook_path):
    return json.loads(Path(notebook_path).read_text())["cells"]


def _source(cell):
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def lesson_template(lesson, source=SOLUTIONS):
    """The template of one lesson: one entry per markdown Unit, msgctxt = the cell's id."""
    path = Path(source) / lesson / f"{lesson}.ipynb"
    catalog, entries = _catalog(), {}
    for cell in _cells(path):
        if cell["cell_type"] != "markdown":
            continue
        for unit in (part for part in segments(_source(cell)) if isinstance(part, Unit)):
            key = (cell["id"], unit.msgid)
            if key not in entries:
                entries[key] = polib.POEntry(msgctxt=cell["id"], msgid=unit.msgid, msgstr="",
                                             occurrences=[(f"{lesson}.ipynb#{cell['id']}", "")])
                catalog.append(entries[key])
    return catalog


def _messages_in(code, where):
    """(English, line) of each message("...") call in `code`, and of plot_history's title and labels."""
    return sorted(((text.value, text.lineno) for text in _message_literals(code, where)),
                  key=lambda text_line: text_line[1])


def _message_literals(code, where):
    """The string constants (ast nodes) that _messages_in reads."""
    magic = ("%", "!")  # IPython's magics and shell lines are not Python
    tree = ast.parse("\n".join("pass" if line.startswith(magic) else line for line in code.splitlines()),
                     filename=where)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
        texts = []
        if name == "message" and node.args:
            texts = [node.args[0]]
        elif name == "plot_history":
            texts = [keyword.value for keyword in node.keywords if keyword.arg == "title"]
            if node.args and isinstance(node.args[0], ast.Dict):
                texts += node.args[0].keys
        found += [text for text in texts if isinstance(text, ast.Constant) and isinstance(text.value, str)]
    return found


def hidden_lines(code):
    """The numbers (from 1) of the lines between `### BEGIN HIDDEN TESTS` and `### END HIDDEN TESTS`."""
    return {number for match in HIDDEN_TESTS.finditer(code)
            for number in range(code.count("\n", 0, match.start()) + 2, code.count("\n", 0, match.end()) + 1)}


def helpers_template(source=SOLUTIONS):
    """The template of what helpers, the lessons' code cells and the feedback page show a student."""
    found = []
    for path in [*sorted((ROOT / "helpers").glob("*.py")), FEEDBACK_PAGE]:
        found += [(text, path.relative_to(ROOT).as_posix()) for text, _ in _messages_in(path.read_text(), str(path))]
    for lesson in lessons(source):
        for cell in _cells(Path(source) / lesson / f"{lesson}.ipynb"):
            if cell["cell_type"] == "code":  # what hidden tests alone write is not for students' eyes
                hidden = hidden_lines(_source(cell))
                found += [(text, f"{lesson}.ipynb#{cell['id']}")
                          for text, line in _messages_in(_source(cell), f"{lesson}.ipynb#{cell['id']}")
                          if line not in hidden]
    return _messages_catalog(found)


def hidden_template(source=SOLUTIONS):
    """The template of the messages that only the lessons' hidden tests write (the grader's)."""
    public = {entry.msgid for entry in helpers_template(source)}
    found = []
    for lesson in lessons(source):
        for cell in _cells(Path(source) / lesson / f"{lesson}.ipynb"):
            if cell["cell_type"] == "code":
                hidden = hidden_lines(_source(cell))
                found += [(text, f"{lesson}.ipynb#{cell['id']}")
                          for text, line in _messages_in(_source(cell), f"{lesson}.ipynb#{cell['id']}")
                          if line in hidden and text not in public]
    return _messages_catalog(found)


def _messages_catalog(found):
    """A catalog of [(message, where it is written)]. An entry names its files and cells, not their
    lines: an edit that moves a message leaves the catalogs as they are."""
    catalog, entries = _catalog(), {}
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


def code_spans(text):
    """The `code` spans and HTML tags of markdown (a hint's <details><summary>), with how often each
    occurs; a fenced block counts as its code without the comments (which translators translate)."""
    if FENCE.match(text):
        return Counter(["\n".join(COMMENT.sub("", line) for line in text.splitlines())])
    return Counter(CODE_SPAN.findall(text) + HTML_TAG.findall(CODE_SPAN.sub("", text)))


# ---- catalogs on disk, and the merge ----------------------------------------------------------

def template_path(domain):
    base = HELPERS_LOCALE if domain == HELPERS_DOMAIN else LOCALE
    return base / "templates" / f"{domain}.pot"


def catalog_path(domain, language):
    base = HELPERS_LOCALE if domain == HELPERS_DOMAIN else LOCALE
    return base / language / "LC_MESSAGES" / f"{domain}.po"


def domains(source=SOLUTIONS):
    return [*lessons(source), HELPERS_DOMAIN, HIDDEN_DOMAIN]


def fresh_template(domain, source=SOLUTIONS):
    if domain == HIDDEN_DOMAIN:
        return hidden_template(source)
    return helpers_template(source) if domain == HELPERS_DOMAIN else lesson_template(domain, source)


def merge(template, old, language):
    """The catalog for `template`, keeping what `old` holds, as msgmerge does.

    Same msgctxt and msgid: the entry is kept (translation, flags). Otherwise, the most similar
    old entry of the same context (cell) that no new entry keeps exactly gives its translation,
    marked fuzzy with the old English as previous_msgid; failing that, the same English from
    another cell (a moved paragraph) keeps its translation. Old entries nobody took become obsolete.
    """
    catalog = _catalog(language)
    old_entries = [entry for entry in old if not entry.obsolete] if old else []
    exact = {(entry.msgctxt, entry.msgid): entry for entry in old_entries}
    taken = {key for key in ((new.msgctxt, new.msgid) for new in template) if key in exact}
    for new in template:
        entry = polib.POEntry(msgctxt=new.msgctxt, msgid=new.msgid, msgstr="", flags=list(new.flags),
                              occurrences=list(new.occurrences))
        kept = exact.get((new.msgctxt, new.msgid))
        if kept:
            entry.msgstr, entry.previous_msgid = kept.msgstr, kept.previous_msgid
            entry.flags += [flag for flag in kept.flags if flag == "fuzzy"]
        else:
            candidates = [e for e in old_entries if e.msgctxt == new.msgctxt and e.msgstr
                          and (e.msgctxt, e.msgid) not in taken]
            ratio = lambda e: difflib.SequenceMatcher(None, e.msgid, new.msgid).ratio()  # noqa: E731
            best = max(candidates, key=ratio, default=None)
            moved = next((e for e in old_entries if e.msgid == new.msgid and e.msgstr
                          and (e.msgctxt, e.msgid) not in taken), None)
            if best is not None and ratio(best) >= 0.6:
                entry.msgstr, entry.previous_msgid = best.msgstr, best.msgid
                entry.flags.append("fuzzy")
                taken.add((best.msgctxt, best.msgid))
            elif moved is not None:  # the same English moved to another cell: its translation holds
                entry.msgstr = moved.msgstr
                taken.add((moved.msgctxt, moved.msgid))
        catalog.append(entry)
    for gone in old_entries:
        if (gone.msgctxt, gone.msgid) not in taken and gone.msgstr:
            gone.obsolete = True
            catalog.append(gone)
    return catalog


def load(path):
    return polib.pofile(str(path), wrapwidth=WRAP) if Path(path).exists() else None


def update(source=SOLUTIONS):
    """Write every template fresh from `source` and merge it into the nl and id catalogs."""
    for domain in domains(source):
        template = fresh_template(domain, source)
        template_path(domain).parent.mkdir(parents=True, exist_ok=True)
        template.save(str(template_path(domain)))
        for language in LANGUAGES:
            path = catalog_path(domain, language)
            path.parent.mkdir(parents=True, exist_ok=True)
            merged = merge(template, load(path), language)
            if domain == HELPERS_DOMAIN:  # a message that moved to the hidden tests' catalog stays out, even obsolete
                hidden = {entry.msgid for entry in hidden_template(source)}
                for entry in [entry for entry in merged if entry.obsolete and entry.msgid in hidden]:
                    merged.remove(entry)
            merged.save(str(path))


def stale_catalogs(source=SOLUTIONS):
    """What is out of date: a template that differs from a fresh extraction, a catalog whose
    entries are not the template's (not merged). Empty when all is in sync with `source`."""
    problems = []
    for domain in domains(source):
        template = fresh_template(domain, source)
        path = template_path(domain)
        if not path.exists() or path.read_text() != str(template):
            problems.append(f"{path.relative_to(ROOT)} differs from the English in {Path(source).name}/")
        expected = [(entry.msgctxt, entry.msgid) for entry in template]
        for language in LANGUAGES:
            catalog = load(catalog_path(domain, language))
            if catalog is None or [(e.msgctxt, e.msgid) for e in catalog if not e.obsolete] != expected:
                problems.append(f"{catalog_path(domain, language).relative_to(ROOT)} is not merged with its template")
    return problems


def counts(catalog):
    return {"entries": len([e for e in catalog if not e.obsolete]), "translated": len(catalog.translated_entries()),
            "fuzzy": len(catalog.fuzzy_entries()), "untranslated": len(catalog.untranslated_entries())}


def stats(source=SOLUTIONS):
    """{(domain, language): counts} of every catalog."""
    return {(domain, language): counts(load(catalog_path(domain, language)) or _catalog())
            for domain in domains(source) for language in LANGUAGES}


# ---- using a catalog -------------------------------------------------------------------------

def translated_notebook(path, language, lesson=None):
    """The notebook at `path` (a lesson's solution or its English release) in `language`, as a dict.

    Only two things change: the markdown cells (from the lesson's catalog) and the value of
    `course_language` in the parameters cell. Locked cells get their nbgrader checksum anew, so
    that nbgrader accepts the translated text as the release's own.
    """
    from nbformat import from_dict
    from nbgrader.utils import compute_checksum

    lesson = lesson or Path(path).stem
    notebook = json.loads(Path(path).read_text())
    finished = {}
    for entry in load(catalog_path(lesson, language)) or []:
        if entry.translated():
            finished.setdefault(entry.msgctxt, {})[entry.msgid] = entry.msgstr
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            text = render_markdown(_source(cell), finished.get(cell["id"], {}), NOT_YET_TRANSLATED[language])
            cell["source"] = text.splitlines(keepends=True)  # as nbformat stores it
        elif "parameters" in cell["metadata"].get("tags", []):
            text, found = LANGUAGE_SETTING.subn(rf'\g<1>"{language}"', _source(cell))
            if found != 1:
                raise ValueError(f"{path}: the parameters cell needs one line course_language = \"en\"")
            cell["source"] = text.splitlines(keepends=True)
        if "checksum" in cell["metadata"].get("nbgrader", {}):
            as_read = from_dict({**cell, "source": _source(cell)})  # nbgrader hashes the source as one string
            cell["metadata"]["nbgrader"]["checksum"] = compute_checksum(as_read)
    return notebook


def write_notebook(notebook, path):
    """Write as nbformat does (1-space indent, sorted keys, newline at the end)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def translate_lessons(out, language, source=SOLUTIONS, names=None):
    """Write OUT/<lesson>/<lesson>.ipynb in `language` for each lesson of `source`; return the paths."""
    paths = []
    for lesson in names or lessons(source):
        path = Path(out) / lesson / f"{lesson}.ipynb"
        write_notebook(translated_notebook(Path(source) / lesson / f"{lesson}.ipynb", language), path)
        paths.append(path)
    return paths


def translate_hidden_tests(notebook, language):
    """`notebook` (a dict, with hidden tests) with the English of each message("...") in its hidden
    tests replaced by the hidden tests' catalog's translation (English with the "not yet
    translated" marker where it has none), so that a failing hidden test speaks the student's
    language in the grader's kernel, which reads only helpers/locale. For the grader's source only."""
    translations = {entry.msgid: entry.msgstr if entry.translated() else f"{entry.msgid} {NOT_YET_TRANSLATED[language]}"
                    for entry in load(catalog_path(HIDDEN_DOMAIN, language)) or [] if not entry.obsolete}
    for cell in notebook["cells"]:
        source = _source(cell)
        hidden = hidden_lines(source) if cell["cell_type"] == "code" else set()
        if not hidden:
            continue
        lines = source.split("\n")
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line) + 1)
        at = lambda number, column: starts[number - 1] + len(lines[number - 1].encode()[:column].decode())  # noqa: E731
        edits = sorted(((at(node.lineno, node.col_offset), at(node.end_lineno, node.end_col_offset),
                         repr(translations[node.value])) for node in _message_literals(source, cell["id"])
                        if node.lineno in hidden and node.value in translations), reverse=True)
        for start, end, text in edits:  # from the end, so that the earlier offsets hold
            source = source[:start] + text + source[end:]
        cell["source"] = source.splitlines(keepends=True)
    return notebook


def grading_source(out, source=SOLUTIONS, names=None):
    """An nbgrader source folder for a class that mixes languages: OUT/<lesson>/ (English) and
    OUT/<lesson>-<language>/ (translated), each holding <lesson>.ipynb; return the assignments."""
    written = []
    for lesson in names or lessons(source):
        for language in ("en", *LANGUAGES):
            notebook = Path(source) / lesson / f"{lesson}.ipynb"
            content = (json.loads(notebook.read_text()) if language == "en"
                       else translate_hidden_tests(translated_notebook(notebook, language), language))
            write_notebook(content, Path(out) / assignment(lesson, language) / f"{lesson}.ipynb")
            written.append(assignment(lesson, language))
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["update", "stats", "preview", "grading-source"])
    parser.add_argument("--language", choices=LANGUAGES, help="preview: the language to write")
    parser.add_argument("--out", help="preview: where to write (build/preview); grading-source: the folder to "
                                      "give autograde's --source (build/i18n/source)")
    args = parser.parse_args(argv)
    if args.command == "update":
        update()
    if args.command == "grading-source":
        out = Path(args.out or ROOT / "build" / "i18n" / "source")
        shutil.rmtree(out, ignore_errors=True)  # nothing stale stays
        print(f"{len(grading_source(out))} assignments (every lesson in en, {', '.join(LANGUAGES)}) in {out}")
        return 0
    if args.command == "preview":  # the solutions as a student of that language reads them
        for language in [args.language] if args.language else LANGUAGES:
            for path in translate_lessons(Path(args.out or ROOT / "build" / "preview") / language, language):
                print(f"wrote {path}")
        return 0
    table = stats()
    print(f"{'catalog':32s} {'lang':4s} {'entries':>7s} {'done':>5s} {'fuzzy':>5s} {'todo':>5s}")
    for (domain, language), row in table.items():
        print(f"{domain:32s} {language:4s} {row['entries']:7d} {row['translated']:5d} {row['fuzzy']:5d} "
              f"{row['untranslated']:5d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
