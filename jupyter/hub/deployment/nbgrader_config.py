"""nbgrader for every user of the class's hub: a template to copy to /etc/jupyter/nbgrader_config.py
(docs/hub.md, "A real deployment"; the hub's config is jupyterhub_config.py beside this file).

- One exchange for every course: a folder on this machine, mode 0777.
- One nbgrader course per language (efficient-training, efficient-training-nl, ...). A student's
  course comes from the roster (/srv/course/roster.json), so their Assignments panel lists only
  the lessons of their language. Users not in the roster's students get the English course.
- No CourseDirectory.student_id: with real users nbgrader takes the Unix user's name.
A user's own ~/.jupyter/nbgrader_config.py ranks above this file (a teacher's course folder, say;
a student could name another course there too: nbgrader cannot prevent it).
"""
import getpass
import json
import os

from course.lessons import SOURCE_LANGUAGE, course_id  # the course's Python, installed for every user

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

# The same places as at the top of jupyterhub_config.py: change them in both files. (The hub
# passes them to every user's server; nbgrader in a terminal outside the hub reads these.)
c.Exchange.root = os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange")
with open(os.environ.get("COURSE_ROSTER", "/srv/course/roster.json")) as file:
    roster = json.load(file)

user = os.environ.get("JUPYTERHUB_USER") or getpass.getuser()  # the same user on a real hub
c.CourseDirectory.course_id = course_id(roster["students"].get(user, SOURCE_LANGUAGE))
