"""The course's own commands: run the lessons, compare the training paths, release, bench.

They may import `helpers` (the training core) and `autograde` (grading); neither imports this.
"""
