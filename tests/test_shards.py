"""Sharded grading: 2 shards of a toy class, merged, give the grades.csv of one run.

Kernels run without the sandbox (--no-sandbox) so that the test runs as any user: the sandbox
is tested in test_autograde.py, and sharding does not depend on it. Grading the class three times
is slow (`make test`); how a class is split, and the merge's refusals, are checked in `make quick`
on OUT folders written by hand (a record, a source, a gradebook file).
"""
import concurrent.futures
import csv
import re
import shutil
import sys
from pathlib import Path

import pytest

import background
from autograde import outfolder, resume, shards
from autograde.variants import Variants
from autograde.collect import Submission
from autograde_toy import autograde, grader, released_toy, write_class, write_source
from course.paths import ROOT as REPO


def test_shares_are_deterministic_disjoint_and_complete():
    subs = [Submission(f"s{i}", a, Path(".")) for i in range(7) for a in ("b", "a")]
    shares = [shards.select(list(reversed(subs)), (k, 3)) for k in (1, 2, 3)]
    assert sorted(len(s) for s in shares) == [4, 5, 5]
    keys = [(s.student, s.assignment) for share in shares for s in share]
    assert sorted(keys) == sorted((s.student, s.assignment) for s in subs) and len(set(keys)) == 14
    assert shares[0] == shards.select(subs, (1, 3))  # the order it is given does not matter


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b"])
def test_bad_shard_argument_is_refused(text):
    import argparse
    with pytest.raises(argparse.ArgumentTypeError, match="--shard"):
        shards.shard_argument(text)


def hand_made_out(folder, planned, graded, shard=None, source="toy", variants=Variants()):
    """An OUT folder as a grading leaves it, as far as the merge's checks read it."""
    (folder / "source" / "toy").mkdir(parents=True)
    (folder / "source" / "toy" / "toy.ipynb").write_text(source)
    outfolder.write_variants(folder, variants)
    (folder / "gradebook.db").write_bytes(b"")
    entries = [{"row": {"student_id": student, "assignment": "toy", "score": "6", "max_score": "6",
                        "status": "graded", "detail": ""}, "seconds": 1.0, "fingerprint": student}
               for student in graded]
    resume.Record(folder, [(student, "toy") for student in planned], shard, entries).save()
    return folder


def test_merge_refuses_what_is_not_one_finished_split(tmp_path):
    whole = hand_made_out(tmp_path / "whole", ["s0", "s1"], ["s0", "s1"])
    first = hand_made_out(tmp_path / "first", ["s0"], ["s0"], (1, 2))
    unfinished = hand_made_out(tmp_path / "unfinished", ["s1", "s2"], ["s1"], (2, 2))
    other = hand_made_out(tmp_path / "other", ["s1"], ["s1"], (2, 2), source="changed")
    told = hand_made_out(tmp_path / "told", ["s1"], ["s1"], (2, 2),
                         variants=Variants({"toy": {"lesson": "toy", "language": "nl"}}))
    (tmp_path / "empty").mkdir()
    for shards_given, refusal in [
            ([first, whole], "s0/toy was graded in two shards"),
            ([first], "shard 2/2 not given: merge the OUT folders of all 2 shards"),
            ([first, unfinished], "not finished, 1 of 2 submissions not graded: s2/toy. Run its grading command again"),
            ([first, other], "graded with other sources than"),
            ([first, told], "graded with another variants table than"),
            ([first, tmp_path / "empty"], "not a graded OUT folder")]:
        with pytest.raises(shards.ShardError, match=re.escape(refusal)):
            shards.merge(shards_given, tmp_path / "merged")
        shutil.rmtree(tmp_path / "merged", ignore_errors=True)


@background.job(early=True)
def shards_job():
    """The toy class graded whole and as 2 shards beside the tests, the shards merged by the
    command the Makefile runs: (root, {"whole" | "shard1" | "shard2": its grading's run})."""
    root = background.folder("shards-test-")
    source = write_source(root / "source")
    release = released_toy(source, root / "seed")
    write_class(root / "submissions", release, [None, "add", "mean", None, "add"])
    shares = {"whole": [], "shard1": ["--shard", "1/2"], "shard2": ["--shard", "2/2"]}
    # the three gradings at once, as shards on several machines run: a toy batch mostly waits
    # (nbgrader's set-up, the kernels' start), so together they take little longer than one
    with concurrent.futures.ThreadPoolExecutor(len(shares)) as pool:
        runs = dict(zip(shares, pool.map(lambda name: background.run(
            grader(root / "submissions", root / name, source, "--no-sandbox", *shares[name], jobs=2),
            cwd=REPO, timeout=900), shares)))
    for run in runs.values():
        assert run.returncode == 0, run.stderr[-3000:]
    merge = background.run([sys.executable, "-m", "autograde.shards", "--out", str(root / "merged"),
                            str(root / "shard1"), str(root / "shard2")], cwd=REPO, timeout=300)
    assert merge.returncode == 0, merge.stderr[-3000:]
    return root, runs


@pytest.fixture(scope="module")
def graded(shards_job):
    return shards_job.result()


def read(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_two_shards_merged_give_the_grades_of_one_run(graded):
    root, runs = graded
    assert len(read(root / "shard1" / "grades.csv")) == 3
    assert len(read(root / "shard2" / "grades.csv")) == 2
    merged, whole = root / "merged", root / "whole"
    assert (merged / "grades.csv").read_text() == (whole / "grades.csv").read_text()
    assert (merged / "grades_wide.csv").read_text() == (whole / "grades_wide.csv").read_text()
    scores = {r["student_id"]: r["score"] for r in read(merged / "grades.csv")}
    assert scores == {"student0": "6", "student1": "4", "student2": "3", "student3": "6",
                      "student4": "4"}
    for student in scores:
        assert (merged / "feedback" / student / "toy" / "toy.html").exists()
    report = (merged / "report.md").read_text()
    assert "| test_add | 3/5 (60 %) |" in report
    assert report.split("## Slowest")[0] == (whole / "report.md").read_text().split("## Slowest")[0]


@pytest.mark.slow
def test_merged_gradebook_has_every_submission(graded):
    from nbgrader.api import Gradebook
    root, _ = graded
    merged = root / "merged"
    with Gradebook(f"sqlite:///{merged}/gradebook.db") as gb:
        scores = {s.student.id: s.score for s in gb.assignment_submissions("toy")}
    assert scores == {"student0": 6, "student1": 4, "student2": 3, "student3": 6, "student4": 4}


@pytest.mark.slow
def test_progress_line_and_summary_link_the_report(graded):
    _, runs = graded
    lines = [line for line in runs["whole"].stderr.splitlines() if line.startswith("[")]
    assert len(lines) == 5 and "elapsed, about" in lines[0] and "0:00 left" in lines[-1]
    assert "Class report: " in runs["whole"].stdout and "report.html" in runs["whole"].stdout


@pytest.mark.slow
def test_merge_refuses_a_shard_graded_twice(graded):
    root, _ = graded
    with pytest.raises(shards.ShardError, match="graded in two shards"):
        shards.merge([root / "shard1", root / "whole"], root / "twice")


@pytest.mark.slow
def test_merge_refuses_an_unfinished_shard_which_its_rerun_finishes(graded, tmp_path):
    root, _ = graded
    shard = tmp_path / "shard2"
    shutil.copytree(root / "shard2", shard)
    record = resume.Record.read(shard)  # as a run stopped before its second submission leaves it
    left = record.planned[1]
    del record.graded[left]
    record.save()
    with pytest.raises(shards.ShardError, match=f"not finished, 1 of 2 submissions not graded: "
                                                f"{'/'.join(left)}. Run its grading command again"):
        shards.merge([root / "shard1", shard], tmp_path / "refused")
    run = autograde(root / "submissions", shard, root / "source", "--no-sandbox", "--shard", "2/2",
                    jobs=1)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "1 already graded, 1 to grade" in run.stderr
    assert [line.split()[-3] for line in run.stderr.splitlines() if line.startswith("[")] == [
        "/".join(left) + ":"]  # the progress line of the one graded
    assert shards.main(["--out", str(tmp_path / "merged"), str(root / "shard1"), str(shard)]) == 0
    assert (tmp_path / "merged" / "grades.csv").read_text() == (root / "whole" / "grades.csv").read_text()


@pytest.mark.slow
def test_merge_refuses_when_a_shard_is_not_given(graded):
    root, _ = graded
    with pytest.raises(shards.ShardError, match="shard 2/2 not given"):
        shards.merge([root / "shard1"], root / "alone")
