"""Where things are: the repository root, the lessons, the outputs. Defined here once."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"          # instructor source: solutions/<lesson>/<lesson>.ipynb
NOTEBOOKS = ROOT / "notebooks"          # student release, generated from SOLUTIONS; nl/ and id/ translated
LOCALE = ROOT / "locale"                # the nl and id catalogs of the lessons' markdown (course.i18n)
JUPYTER_CONFIG = ROOT / "jupyter"       # nbgrader's course config, for `make lab` and `make release`
BUILD = ROOT / "build"                  # every output


def lessons(source=SOLUTIONS):
    """The lesson names of `source`, in course order: folders holding a notebook named like them."""
    return sorted(folder.name for folder in Path(source).iterdir()
                  if (folder / f"{folder.name}.ipynb").is_file())


def lesson_notebooks(names=None, source=SOLUTIONS):
    """<source>/<lesson>/<lesson>.ipynb for the given lesson names (all when None)."""
    known = lessons(source)
    unknown = [name for name in names or () if name not in known]
    if unknown:
        raise SystemExit(f"unknown lesson(s) {unknown}; the lessons are {known}")
    return [Path(source) / name / f"{name}.ipynb" for name in names or known]
