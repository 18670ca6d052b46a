"""Course tooling around nbgrader: release, execution of the lessons, and grading a class."""
