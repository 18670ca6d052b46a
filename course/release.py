"""Regenerate the student notebooks (notebooks/) from the instructor's lessons (solutions/).

    python -m course.release            # update the catalogs, write notebooks/ in every language
    python -m course.release --check    # exit 1 when notebooks/ or the catalogs' templates are stale

nbgrader's generate_assignment does the work (course config: jupyter/nbgrader_config.py): it
replaces the code between ### BEGIN SOLUTION / ### END SOLUTION with a stub, removes hidden
tests, clears outputs and records checksums of the locked cells. That gives the English
notebooks/<lesson>/<lesson>.ipynb; notebooks/<nl|id>/<lesson>/<lesson>.ipynb are the same
notebooks with the markdown from the catalogs and the language in the parameters cell
(course.i18n), so code, tests and metadata stay those of the English release.
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
from .paths import JUPYTER_CONFIG, NOTEBOOKS, ROOT, lessons


def generate(out, names=None):
    """Release each lesson into `out`: OUT/<lesson>/ in English (nbgrader generate_assignment) and
    OUT/<language>/<lesson>/ translated from it; return the lesson names."""
    names = names or lessons()
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        # a throw-away gradebook: releasing must not touch the course's gradebook
        generate_assignments(names, root=ROOT, release_directory=out, config_path=JUPYTER_CONFIG,
                             db_url=f"sqlite:///{Path(scratch) / 'gradebook.db'}")
    for name in names:
        notebook = out / name / f"{name}.ipynb"
        if not notebook.is_file():
            raise RuntimeError(f"nbgrader wrote no {notebook}")
        normalise(notebook)
        for language in i18n.LANGUAGES:
            i18n.write_notebook(i18n.translated_notebook(notebook, language, name),
                                out / language / name / f"{name}.ipynb")
    return names


def normalise(path):
    """Write the notebook as nbformat does (i18n.write_notebook)."""
    i18n.write_notebook(json.loads(Path(path).read_text()), path)


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
        for folder_name in [*names, *(f"{language}/{name}" for language in i18n.LANGUAGES for name in names)]:
            shutil.rmtree(NOTEBOOKS / folder_name, ignore_errors=True)  # whole, so nothing stale stays
            shutil.copytree(Path(folder) / folder_name, NOTEBOOKS / folder_name)
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
