"""The command `python -m course.i18n update|stats|preview|grading-source` (see course/i18n/__init__.py)."""
import argparse
import shutil
import sys
from pathlib import Path

from .. import i18n
from ..paths import ROOT
from . import LANGUAGES, grading_source, stats, translate_lessons, update


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m course.i18n", description=i18n.__doc__.splitlines()[0])
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
