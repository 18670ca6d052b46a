"""The lessons' earlier releases, from the course's git history, for the grader.

A student who fetched a lesson before the instructor changed it hands in that release. The grader
compares a submission with the release it differs least from (autograde/validate.py), of the one it
makes from the source and the earlier ones it is told (`python -m autograde --earlier-releases`):
every committed version of each lesson's release notebook in every language
(notebooks/<lesson>/<lesson>.ipynb, notebooks/nl/<lesson>/...) and the one in the working tree
(what `course.hub release` hands out, committed or not). Outside a git clone it knows the working
tree's only.
"""
import json
import subprocess

from autograde.validate import released_cells

from .lessons import editions
from .paths import ROOT


def earlier_releases(lessons, root=ROOT):
    """{assignment: {notebook: [released_cells of each version, without repeats]}} of `lessons` in
    every language, for `--earlier-releases`."""
    paths = {edition: (edition.release_dir / f"{edition.lesson}.ipynb").relative_to(ROOT)
             for edition in editions(lessons)}
    texts = _committed(root, [str(path) for path in paths.values()])
    table = {}
    for edition, path in paths.items():
        versions = texts.get(str(path), [])
        if (root / path).is_file():
            versions = [*versions, (root / path).read_text()]
        releases = []
        for text in versions:
            try:
                cells = released_cells(json.loads(text))
            except (ValueError, KeyError, TypeError):  # a version that is no notebook: never released
                continue
            if cells and cells not in releases:
                releases.append(cells)
        table[edition.assignment] = {edition.lesson: releases}
    return table


def _committed(root, paths):
    """{path: [its text in each commit that changed it]} in git's history of `root` ({} outside git)."""
    log = subprocess.run(["git", "-C", str(root), "log", "--format=commit %H", "--name-only", "--", *paths],
                         capture_output=True, text=True)
    if log.returncode != 0:
        return {}
    wanted, commit = [], None
    for line in log.stdout.splitlines():
        if line.startswith("commit "):
            commit = line.split()[1]
        elif line in paths:
            wanted.append((commit, line))
    blobs = subprocess.run(["git", "-C", str(root), "cat-file", "--batch"], capture_output=True, check=True,
                           input="".join(f"{commit}:{path}\n" for commit, path in wanted).encode())
    texts, output, at = {}, blobs.stdout, 0
    for _, path in wanted:
        header_end = output.index(b"\n", at)
        header = output[at:header_end].split()
        at = header_end + 1
        if header[-1] == b"missing":  # deleted in that commit
            continue
        size = int(header[2])
        texts.setdefault(path, []).append(output[at:at + size].decode("utf-8", errors="replace"))
        at += size + 1
    return texts
