"""Regenerate the student notebooks (notebooks/) from the instructor's lessons (solutions/).

    python -m course.release            # write notebooks/<lesson>/<lesson>.ipynb
    python -m course.release --check    # exit 1 when notebooks/ differs from a fresh release

nbgrader's generate_assignment does the work (course config: jupyter/nbgrader_config.py): it
replaces the code between ### BEGIN SOLUTION / ### END SOLUTION with a stub, removes hidden
tests, clears outputs and records checksums of the locked cells.
"""
import argparse
import difflib
import json
import shutil
import sys
import tempfile
from pathlib import Path

from autograde.course import generate_assignment

from .paths import JUPYTER_CONFIG, NOTEBOOKS, ROOT, lessons


def generate(out, names=None):
    """Run nbgrader generate_assignment for each lesson into `out`; return the lesson names."""
    names = names or lessons()
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            # a throw-away gradebook: releasing must not touch the course's gradebook
            generate_assignment(name, root=ROOT, release_directory=out, config_path=JUPYTER_CONFIG,
                                db_url=f"sqlite:///{Path(scratch) / 'gradebook.db'}")
            notebook = out / name / f"{name}.ipynb"
            if not notebook.is_file():
                raise RuntimeError(f"nbgrader wrote no {notebook}")
            normalise(notebook)
    return names


def normalise(path):
    """Write the notebook as nbformat does (1-space indent, sorted keys, newline at the end)."""
    notebook = json.loads(Path(path).read_text())
    Path(path).write_text(json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


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
        with tempfile.TemporaryDirectory() as folder:
            generate(folder)
            problems = differences(folder)
        if problems:
            print("notebooks/ is out of date; run `make release`:\n" + "\n".join(problems))
            return 1
        print("notebooks/ is in sync with solutions/")
        return 0
    with tempfile.TemporaryDirectory() as folder:
        names = generate(folder)
        for name in names:  # replace each lesson's folder whole, so nothing stale stays behind
            shutil.rmtree(NOTEBOOKS / name, ignore_errors=True)
            shutil.copytree(Path(folder) / name, NOTEBOOKS / name)
    for name in names:
        print(f"released notebooks/{name}/{name}.ipynb")
    return 0


if __name__ == "__main__":
    sys.exit(main())
