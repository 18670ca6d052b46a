"""Regenerate the student notebooks (notebooks/) from the instructor's lessons (solutions/).

    python -m course.release            # update the catalogs, write notebooks/ in every language
    python -m course.release --check    # exit 1 when notebooks/ or the catalogs' templates are stale

Each lesson in each language (an Edition) is first the notebook the grader grades against
(course.i18n.edition_notebook: English as written, nl and id with the markdown from the catalogs
and the language in the parameters cell). nbgrader's generate_assignment then releases each
(course config: jupyter/nbgrader_config.py): it replaces the code between ### BEGIN SOLUTION /
### END SOLUTION with a stub, removes hidden tests, clears outputs and records checksums of the
locked cells. That gives notebooks/<lesson>/<lesson>.ipynb and notebooks/<nl|id>/<lesson>/, whose
code, tests and metadata are those of the English release, and whose checksums are nbgrader's.
"""
import argparse
import difflib
import json
import shutil
import sys
import tempfile
from pathlib import Path

from autograde.nbgrader_course import generate_assignments
from helpers.language import LANGUAGE_TABLE, LANGUAGES

from . import i18n
from .lessons import editions, in_language
from .paths import JUPYTER_CONFIG, NOTEBOOKS, ROOT, lessons


def generate(out, names=None):
    """Release each lesson in every language into `out`: OUT/<lesson>/ (English) and
    OUT/<language>/<lesson>/, each holding nbgrader's release of the Edition; return the lesson names."""
    names = names or lessons()
    out = Path(out).resolve()
    chosen = editions(names)
    with tempfile.TemporaryDirectory() as scratch:
        source, released = Path(scratch) / "source", Path(scratch) / "release"
        # a throw-away gradebook: releasing must not touch the course's gradebook
        generate_assignments(i18n.write_source(source, chosen), root=ROOT, source_directory=source,
                             release_directory=released, config_path=JUPYTER_CONFIG,
                             db_url=f"sqlite:///{Path(scratch) / 'gradebook.db'}")
        for edition in chosen:
            notebook = released / edition.assignment / f"{edition.lesson}.ipynb"
            if not notebook.is_file():
                raise RuntimeError(f"nbgrader wrote no {notebook}")
            i18n.write_notebook(json.loads(notebook.read_text()),  # as nbformat writes it
                                in_language(out, edition.language) / edition.lesson / notebook.name)
    return names


def differences(released, committed=NOTEBOOKS):
    """Lines that differ between a fresh release and the committed notebooks/ (empty: in sync)."""
    released, committed = Path(released), Path(committed)
    names = sorted({p.relative_to(released) for p in released.rglob("*.ipynb")}
                   | {p.relative_to(committed) for p in committed.rglob("*.ipynb")
                      if ".ipynb_checkpoints" not in p.parts})
    lines = []
    for name in names:
        new, old = released / name, committed / name
        if not old.exists():
            lines.append(f"{name}: missing from {committed}")
        elif not new.exists():
            lines.append(f"{name}: in {committed} but not made from solutions/")
        elif new.read_text() != old.read_text():
            diff = difflib.unified_diff(old.read_text().splitlines(), new.read_text().splitlines(),
                                        f"committed/{name}", f"released/{name}", lineterm="", n=1)
            lines += list(diff)[:40]
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="only compare a fresh release with notebooks/; exit 1 when they differ")
    args = parser.parse_args(argv)
    if args.check:
        problems = i18n.stale_catalogs()
        with tempfile.TemporaryDirectory() as folder:
            generate(folder)
            problems += differences(folder)
        if problems:
            print("notebooks/ or locale/ is out of date; run `make release`:\n" + "\n".join(problems))
            return 1
        print("notebooks/ (en, " + ", ".join(i18n.LANGUAGES) + ") and the catalogs are in sync with solutions/")
        return 0
    i18n.update()  # the catalogs first: the translated notebooks are made from them
    with tempfile.TemporaryDirectory() as folder:
        names = generate(folder)
        for edition in editions(names):
            shutil.rmtree(edition.release_dir, ignore_errors=True)  # whole, so nothing stale stays
            shutil.copytree(Path(folder) / edition.release_dir.relative_to(NOTEBOOKS), edition.release_dir)
    for name in names:
        print(f"released notebooks/{name}/{name}.ipynb")
    for language in sorted(set(LANGUAGE_TABLE) - set(LANGUAGES)):  # not taught (any more): its catalogs stay
        if (NOTEBOOKS / language).is_dir():
            shutil.rmtree(NOTEBOOKS / language)
            print(f"removed notebooks/{language}/: the course does not teach {LANGUAGE_TABLE[language][0]}")
    table = i18n.stats()
    for language in i18n.LANGUAGES:
        rows = [row for (_, row_language), row in table.items() if row_language == language]
        fuzzy, untranslated = sum(r["fuzzy"] for r in rows), sum(r["untranslated"] for r in rows)
        print(f"released notebooks/{language}/ ({len(names)} lessons, {sum(r['entries'] for r in rows)} entries)"
              + (f": {fuzzy} fuzzy and {untranslated} untranslated, shown in English and marked"
                 if fuzzy or untranslated else ": all translated"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
