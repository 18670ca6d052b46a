"""Grading a class with nbgrader: collect the submissions, grade each one in its own sandboxed
kernel, write the feedback, the table and the class report (`python -m autograde`; README,
"Grading a class"). The release and the lessons' execution live in `course/`, which tells this
package what it needs of the course (autograde/__main__.py): autograde imports no other package
of the course."""
