"""The course in en, nl and id from one source (course/i18n/, helpers/language.py).

Staleness can't hide: the templates are what extraction from solutions/ gives now, the catalogs
are merged with them, and notebooks/<nl|id>/ are what the catalogs make of the English release.
A changed English paragraph turns its translation fuzzy, and a fuzzy or untranslated paragraph
shows in English with a marker, never as the old translation. Fast: no nbgrader, no kernel.
"""
import csv
import json
import os
import re
import subprocess

import polib
import pytest

from course import i18n
from course.lessons import Edition
from course.paths import NOTEBOOKS, ROOT, lessons
from helpers import language
from helpers.language import LANGUAGES
from taught import needs

LESSONS = lessons()
CATALOGS = [(domain, lang) for domain in i18n.domains() for lang in i18n.LANGUAGES]
MARKDOWN = """# Lesson 9: Title

A paragraph that is
wrapped over two lines.

- an item
  that goes on;
- `code` in an item.

| a | b |
| --- | --- |
| one | two |

```python
x = 1  # a comment

y = 2
```

<details><summary>Hint 1: the idea</summary>

A hint.

</details>
"""


def cells(path):
    return json.loads(path.read_text())["cells"]


def test_segments_give_the_markdown_back_and_one_unit_per_paragraph():
    parts = i18n.segments(MARKDOWN)
    assert "".join(p if isinstance(p, str) else p.text for p in parts) == MARKDOWN
    assert [(u.kind, u.msgid) for u in parts if isinstance(u, i18n.Unit)] == [
        ("heading", "Lesson 9: Title"), ("paragraph", "A paragraph that is wrapped over two lines."),
        ("item", "an item that goes on;"), ("item", "`code` in an item."),
        ("row", "| a | b |"), ("row", "| one | two |"),
        ("code", "```python\nx = 1  # a comment\n\ny = 2\n```"),
        ("paragraph", "<details><summary>Hint 1: the idea</summary>"), ("paragraph", "A hint.")]  # no "</details>"
    for lesson in LESSONS:  # every real cell survives the round trip
        for cell in cells(ROOT / "solutions" / lesson / f"{lesson}.ipynb"):
            if cell["cell_type"] == "markdown":
                source = i18n.cell_source(cell)
                assert "".join(p if isinstance(p, str) else p.text for p in i18n.segments(source)) == source


def test_templates_and_catalogs_are_in_sync_with_solutions():
    """Fails after an English edit in solutions/ (or a new helpers.message) without `make release`."""
    problems = i18n.stale_catalogs()
    assert not problems, "run `make release` (python -m course.i18n update):\n" + "\n".join(problems)


def test_a_changed_english_paragraph_turns_fuzzy_and_shows_in_english():
    template = polib.POFile()
    for english in ("Old heading", "A paragraph.", "Removed."):
        template.append(polib.POEntry(msgctxt="cell", msgid=english, msgstr=""))
    translated = i18n.merge(template, None, "nl")
    for entry, dutch in zip(translated, ("Oude kop", "Een alinea.", "Weg.")):
        entry.msgstr = dutch
    changed = polib.POFile()
    for english in ("Old heading", "A paragraph, changed.", "A new paragraph."):
        changed.append(polib.POEntry(msgctxt="cell", msgid=english, msgstr=""))
    merged = i18n.merge(changed, translated, "nl")
    fuzzy = merged.find("A paragraph, changed.", msgctxt="cell")
    assert fuzzy.fuzzy and fuzzy.msgstr == "Een alinea." and fuzzy.previous_msgid == "A paragraph."
    assert i18n.counts(merged) == {"entries": 3, "translated": 1, "fuzzy": 1, "untranslated": 1}
    assert [e.msgid for e in merged.obsolete_entries()] == ["Removed."]
    finished = {e.msgid: e.msgstr for e in merged.translated_entries()}
    shown = i18n.render_markdown("# Old heading\n\nA paragraph, changed.\n", finished, "[nog niet vertaald]")
    assert shown == "# Oude kop\n\nA paragraph, changed. *[nog niet vertaald]*\n"


def test_a_paragraph_moved_to_another_cell_keeps_its_translation():
    old = polib.POFile()
    old.append(polib.POEntry(msgctxt="cell-a", msgid="Moved.", msgstr="Verplaatst."))
    new = polib.POFile()
    new.append(polib.POEntry(msgctxt="cell-b", msgid="Moved.", msgstr=""))
    merged = i18n.merge(new, old, "nl")
    assert merged.find("Moved.", msgctxt="cell-b").msgstr == "Verplaatst."
    assert not merged.fuzzy_entries() and not merged.obsolete_entries()


def without_checksums(cell):
    return {**cell, "metadata": {**cell["metadata"], "nbgrader": {
        k: v for k, v in cell["metadata"].get("nbgrader", {}).items() if k != "checksum"}}}


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
@pytest.mark.parametrize("lesson", LESSONS)
def test_generated_notebook_is_the_english_release_with_translated_markdown(lesson, lang):
    """notebooks/<lang>/ is what the catalogs make of notebooks/ today; code, tests and metadata
    are the English release's, only markdown, its checksums and the parameters' language differ.
    The checksums are nbgrader's of the translated text (its release of the translated lesson)."""
    from nbformat import from_dict
    from nbgrader.utils import compute_checksum

    from course.lessons import with_parameters

    english = json.loads((NOTEBOOKS / lesson / f"{lesson}.ipynb").read_text())
    path = NOTEBOOKS / lang / lesson / f"{lesson}.ipynb"
    assert path.exists(), f"{path} is missing: run `make release`"
    translated = json.loads(path.read_text())
    expected = i18n.translate_notebook(english, Edition(lesson, lang))
    assert {**translated, "cells": [without_checksums(c) for c in translated["cells"]]} == {
        **expected, "cells": [without_checksums(c) for c in expected["cells"]]}, f"{path} is out of date: run `make release`"
    for cell in translated["cells"]:
        if "checksum" in cell["metadata"].get("nbgrader", {}):  # nbgrader hashes the source as one string
            assert cell["metadata"]["nbgrader"]["checksum"] == compute_checksum(
                from_dict({**cell, "source": i18n.cell_source(cell)})), f"{path}: cell {cell['id']}'s checksum"
    assert {k: v for k, v in translated.items() if k != "cells"} == {k: v for k, v in english.items() if k != "cells"}
    assert [c["id"] for c in translated["cells"]] == [c["id"] for c in english["cells"]]
    for mine, theirs in zip(translated["cells"], english["cells"]):
        if mine["cell_type"] == "markdown":
            assert {**without_checksums(mine), "source": None} == {**without_checksums(theirs), "source": None}
        elif "parameters" in mine["metadata"].get("tags", []):
            assert i18n.cell_source(mine) == with_parameters(i18n.cell_source(theirs), {"course_language": lang})
        else:
            assert mine == theirs, f"{path}: cell {mine['id']} differs from the English release"


@pytest.mark.parametrize("domain,lang", CATALOGS)
def test_translations_are_complete(domain, lang):
    """0 fuzzy and 0 untranslated entries. FAILS UNTIL THE TRANSLATORS FINISH (see /locale and the
    README's "Languages"); every other test here holds whatever the state of the translations."""
    row = i18n.stats()[(domain, lang)]
    assert (row["fuzzy"], row["untranslated"]) == (0, 0), (
        f"{i18n.catalog_path(domain, lang).relative_to(ROOT)}: {row['fuzzy']} fuzzy and {row['untranslated']} "
        f"untranslated of {row['entries']} (python -m course.i18n stats)")


@pytest.mark.parametrize("domain,lang", CATALOGS)
def test_translations_keep_placeholders_and_code(domain, lang):
    """A message keeps its {fields} (with their format), a paragraph its `code` spans and HTML tags."""
    wrong = []
    for entry in i18n.load(i18n.catalog_path(domain, lang)).translated_entries():
        if domain in (i18n.HELPERS_DOMAIN, i18n.HIDDEN_DOMAIN):
            if i18n.placeholders(entry.msgstr) != i18n.placeholders(entry.msgid):
                wrong.append(f"{entry.msgid!r}: fields {sorted(i18n.placeholders(entry.msgstr))}, "
                             f"English {sorted(i18n.placeholders(entry.msgid))}")
        elif i18n.code_spans(entry.msgstr) != i18n.code_spans(entry.msgid):
            wrong.append(f"[{entry.msgctxt}] {entry.msgid[:60]!r}: code {sorted(i18n.code_spans(entry.msgstr))}, "
                         f"English {sorted(i18n.code_spans(entry.msgid))}")
    assert not wrong, "\n".join(wrong)


def glossary():
    with open(ROOT / "locale" / "glossary.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_glossary_has_every_term_in_both_languages():
    rows = glossary()
    assert rows and set(rows[0]) >= {"en", "nl", "id"}
    missing = [f"{row['en']}: {lang}" for row in rows for lang in i18n.LANGUAGES if not row[lang].strip()]
    assert not missing, "locale/glossary.csv lacks: " + ", ".join(missing)


def uses_term(prose, english):
    """The paragraph uses the term, not a name that contains it ("Weights & Biases" is no "weights")."""
    for match in re.finditer(rf"\b{re.escape(english)}(s|es)?\b", prose, re.I):
        starts_sentence = not prose[:match.start()].strip() or prose[:match.start()].rstrip()[-1] in ".:;!?(*"
        if match.group()[0].islower() or starts_sentence:
            return True
    return False


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_translations_use_the_glossary(lang):
    """A finished translation of a paragraph holding a glossary term holds one of its forms ("|")."""
    terms = [(row["en"], row[lang].split("|")) for row in glossary() if row[lang].strip()]
    wrong = []
    for domain in i18n.domains():
        for entry in i18n.load(i18n.catalog_path(domain, lang)).translated_entries():
            prose = re.sub(r"\{[^{}]*\}", "", i18n.CODE_SPAN.sub("", entry.msgid))  # not code, not {fields}
            for english, forms in terms:
                if uses_term(prose, english) and not any(
                        form.strip().lower() in entry.msgstr.lower() for form in forms):
                    wrong.append(f"{domain} [{entry.msgctxt}] '{english}' -> {forms}: {entry.msgstr[:80]!r}")
    assert not wrong, f"{len(wrong)} translations miss a glossary term:\n" + "\n".join(wrong[:30])


def test_message_follows_the_language_and_marks_what_is_not_translated(tmp_path, monkeypatch):
    catalog = polib.POFile()
    catalog.append(polib.POEntry(msgid="{steps} steps", msgstr="{steps} stappen"))
    catalog.append(polib.POEntry(msgid="Changed.", msgstr="Oud.", flags=["fuzzy"]))
    (tmp_path / "nl" / "LC_MESSAGES").mkdir(parents=True)
    catalog.save(str(tmp_path / "nl" / "LC_MESSAGES" / "helpers.po"))
    monkeypatch.setattr(language, "LOCALE", tmp_path)
    language.catalog.cache_clear()
    monkeypatch.setattr(language, "_language", "en")
    try:
        assert language.message("{steps} steps", steps=3) == "3 steps"
        language.use_language("nl")
        assert language.message("{steps} steps", steps=3) == "3 stappen"
        assert language.message("Changed.") == "Changed. [nog niet vertaald]"   # fuzzy: never the old text
        assert language.message("made at run time") == "made at run time"      # not in the catalog
        with pytest.raises(ValueError, match="course_language"):
            language.use_language("fr")
    finally:
        language.catalog.cache_clear()


@pytest.mark.parametrize("command,expected", [
    ("lab", "jupyter lab notebooks/\n"), ("lab COURSE_LANG=nl", "jupyter lab notebooks/nl\n"),
    ("lab LANG=nl", "jupyter lab notebooks/\n"), ("run COURSE_LANG=id", "course.run --compare --language id\n"),
    ("run LANG=id.UTF-8", "course.run --compare --language en\n")])
def test_the_language_is_course_lang_never_the_shells_lang(command, expected):
    """make imports the environment: a shell's LANG must not pick the course's language."""
    # --no-print-directory: under `make test` this make is a sub-make, which would print "Entering directory"
    out = subprocess.run(["make", "--no-print-directory", "-n", *command.split()], cwd=ROOT, capture_output=True,
                         text=True).stdout
    assert out.endswith(expected), out


@needs("nl", "id")
def test_class_report_shows_a_lesson_across_languages():
    from autograde import class_report
    from autograde.variants import Variants
    from course.grade import variants
    rows = [{"student_id": s, "assignment": a, "language": lang, "score": score}
            for s, a, lang, score in [("a", "01_basic_loop", "en", 6), ("b", "01_basic_loop", "nl", 2),
                                      ("c", "01_basic_loop", "nl", 6), ("d", "01_basic_loop", "id", 6),
                                      ("e", "02_accelerator", "en", 7)]]
    tests = {("01_basic_loop", "01_basic_loop", "l1-test"): [
                 ("a", "en", True, None), ("b", "nl", False, "AssertionError: ..."), ("c", "nl", True, None),
                 ("d", "id", True, None)],
             ("02_accelerator", "02_accelerator", "l2-test"): [("e", "en", True, None)]}
    table = Variants(**variants())  # what course.grade tells the grader
    assert (table.lesson("01_basic_loop-nl"), table.language("01_basic_loop-nl")) == ("01_basic_loop", "nl")
    assert (table.lesson("06_local_sgd"), table.language("06_local_sgd")) == ("06_local_sgd", "en")
    blocks = class_report._across_languages(rows, tests, list(table.languages))
    assert blocks == [("h2", "01_basic_loop across languages"), ("table", [
        ["", "en", "nl", "id", "all"],
        ["mean score (submissions)", "6.00 (1)", "4.00 (2)", "6.00 (1)", "5.00 (4)"],
        ["l1-test", "1/1 (100 %)", "1/2 (50 %)", "1/1 (100 %)", "3/4 (75 %)"]])]


@needs("nl", "id")
def test_the_grader_files_each_submission_under_its_notebooks_language(tmp_path):
    """A Dutch or Indonesian notebook handed in as 01_basic_loop (nbgrader collect, an LMS export) is
    graded as 01_basic_loop-nl / -id; an English one in the -nl folder as 01_basic_loop."""
    import zipfile

    from autograde.collect import collect
    from autograde.variants import Variants
    from course.grade import variants
    table = Variants(**variants())  # what course.grade tells the grader
    lesson = "01_basic_loop"
    assignments = {Edition(lesson, lang).assignment: [lesson] for lang in LANGUAGES}
    released = {lang: Edition(lesson, lang).release_dir / f"{lesson}.ipynb" for lang in LANGUAGES}
    handed_in = {("dutch", lesson): "nl", ("indonesian", lesson): "id", ("english", f"{lesson}-nl"): "en",
                 ("both", lesson): "nl", ("both", f"{lesson}-nl"): "nl"}  # both: each stays where it is
    for (student, folder), lang in handed_in.items():
        (tmp_path / "folder" / student / folder).mkdir(parents=True)
        (tmp_path / "folder" / student / folder / f"{lesson}.ipynb").write_text(released[lang].read_text())
    found = collect(tmp_path / "folder", assignments, tmp_path / "work", variants=table)
    assert [(s.student, s.assignment) for s in found] == [
        ("both", lesson), ("both", f"{lesson}-nl"), ("dutch", f"{lesson}-nl"), ("english", lesson),
        ("indonesian", f"{lesson}-id")]
    with zipfile.ZipFile(tmp_path / "export.zip", "w") as export:  # flat LMS names say no language
        for student, lang in (("jdoe", "nl"), ("asari", "id"), ("smith", "en")):
            export.writestr(f"{student}_1234_assignsubmission_file_{lesson}.ipynb", released[lang].read_text())
    found = collect(tmp_path / "export.zip", assignments, tmp_path / "work", variants=table)
    assert [(s.student, s.assignment) for s in found] == [
        ("asari", f"{lesson}-id"), ("jdoe", f"{lesson}-nl"), ("smith", lesson)]


@needs("nl")
def test_make_run_translates_the_solutions_it_executes(tmp_path):
    """`make run COURSE_LANG=nl` runs the solutions with the Dutch markdown, course_language = "nl" and the
    hidden tests' messages in Dutch: the notebook the grader grades a Dutch submission against."""
    lesson = LESSONS[0]
    [path] = i18n.translate_lessons(tmp_path, "nl", names=[lesson])
    english = cells(ROOT / "solutions" / lesson / f"{lesson}.ipynb")
    dutch = cells(path)
    assert path == tmp_path / lesson / f"{lesson}.ipynb"
    code = lambda notebook: [i18n.HIDDEN_TESTS.sub("", i18n.cell_source(c)) for c in notebook  # noqa: E731
                             if c["cell_type"] == "code" and "parameters" not in c["metadata"].get("tags", [])]
    assert code(dutch) == code(english)
    i18n.grading_source(tmp_path / "source", names=[lesson])
    assert (tmp_path / "source" / Edition(lesson, "nl").assignment / path.name).read_text() == path.read_text()
    assert any(re.search(r'^course_language(: str)? = "nl"', i18n.cell_source(c), re.M) for c in dutch)
    assert [i18n.cell_source(c) for c in dutch if c["cell_type"] == "markdown"] == [
        i18n.render_markdown(i18n.cell_source(c), {e.msgid: e.msgstr for e in i18n.load(i18n.catalog_path(lesson, "nl"))
                                              if e.translated() and e.msgctxt == c["id"]}, "[nog niet vertaald]")
        for c in english if c["cell_type"] == "markdown"]


def test_make_lab_uses_jupyterlabs_language_pack_only_where_installed(tmp_path):
    command = ["make", "-n", "lab", "COURSE_LANG=nl"]
    without = subprocess.run(command, cwd=ROOT, capture_output=True, text=True).stdout
    (tmp_path / "jupyterlab_language_pack_nl_NL.py").write_text("")  # stands for the installed pack
    with_pack = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": str(tmp_path)}).stdout
    assert "jupyter/lab-nl" not in without and f"JUPYTER_CONFIG_PATH={ROOT}/jupyter:{ROOT}/jupyter/lab-nl " in with_pack
    settings = json.loads((ROOT / "jupyter" / "lab-nl" / "labconfig" / "default_setting_overrides.json").read_text())
    assert settings["@jupyterlab/translation-extension:plugin"]["locale"] == "nl_NL"


def test_a_language_the_course_lacks_is_graded_in_english_and_says_so(tmp_path):
    """course_language = "fr" (a typo): the submission stays the English lesson, its kernel runs in
    English (the grader injects course_language), and its row's detail says so."""
    from types import SimpleNamespace

    from autograde.batch import _parameters
    from autograde.collect import collect
    from autograde.variants import Variants
    from course.grade import variants
    table = Variants(**variants())  # what course.grade tells the grader
    lesson = "01_basic_loop"
    assignments = {Edition(lesson, lang).assignment: [lesson] for lang in LANGUAGES}
    text, replaced = re.subn(r'(course_language(?:: str)? = \\")en\\"', r'\1fr\\"',
                             (NOTEBOOKS / lesson / f"{lesson}.ipynb").read_text())  # with a type hint or not
    assert replaced == 1
    (tmp_path / "typo" / lesson).mkdir(parents=True)
    (tmp_path / "typo" / lesson / f"{lesson}.ipynb").write_text(text)
    [found] = collect(tmp_path, assignments, tmp_path / "work", variants=table)
    assert (found.assignment, found.language) == (lesson, "en")
    assert "'fr'" in found.note and "English" in found.note
    options = SimpleNamespace(variants=Variants({lesson: {"lesson": lesson, "language": "en",
                                                          "parameters": {"epochs": "1"}}}))
    assert _parameters(options, found) == {"epochs": "1", "course_language": "'en'"}
