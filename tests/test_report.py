"""autograde/report.py, what the instructor reads as the grading runs: the progress line of a
submission and the closing summary, on made-up rows."""
import io
import os

from autograde import report


def row(status, score="6"):
    return {"student_id": "ann", "assignment": "01_loop", "score": score, "max_score": "6", "status": status}


def test_the_summary_counts_the_failed_and_the_noted():
    rows = [row(status) for status in ("graded", "timeout", "modified", "timeout")]
    assert report.summary(rows, 12.34, 2, kept=1) == (
        "Graded 3 submissions in 12.3 s with 2 parallel jobs and kept 1 already graded (resumed): 4 in all, "
        "2 graded, 2 failed.\nFailed, by kind: timeout 2\nGraded with notes: modified 1")
    assert report.summary([row("graded")], 1.0, 1) == "Graded 1 submissions in 1.0 s with 1 parallel jobs: 1 graded, 0 failed."
    assert [report.clock(s) for s in (0, 65, 3725)] == ["0:00", "1:05", "1:02:05"]


def test_the_progress_line_counts_what_an_earlier_run_graded_and_guesses_what_is_left():
    stream = io.StringIO()
    report.progress(2, 10, row("graded", "4"), elapsed=20, kept=3, stream=stream)
    assert stream.getvalue() == ("[###############...............] 5/10 (3 already graded) 0:20 elapsed, "
                                 "about 0:50 left  ann/01_loop: graded 4/6\n")


def test_a_reader_that_went_away_does_not_stop_the_grading():
    reader, writer = os.pipe()
    stream = open(writer, "w")
    os.close(reader)  # nobody reads: a write raises BrokenPipeError
    report.say("lost", stream)
    report.say("lost too", stream)  # the stream now writes to /dev/null
    stream.close()
