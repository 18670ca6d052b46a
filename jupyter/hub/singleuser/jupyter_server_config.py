"""Every user's Jupyter server on the course's hub (JUPYTER_CONFIG_PATH, set by jupyter/hub/jupyterhub_config.py).

Each save of a notebook adds the hub user to its metadata (`efficient_training.saved_by`), so that
the grader can flag a notebook handed in by one student but saved by another (autograde/exchange.py).
A student who edits the notebook's JSON by hand can remove it: it flags copying, it proves nothing.
"""
import os

c = get_config()  # noqa: F821
USER = os.environ.get("JUPYTERHUB_USER", "")


def stamp_saved_by(model, **kwargs):
    if not USER or model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    metadata = model["content"].setdefault("metadata", {})
    stamp = metadata.setdefault("efficient_training", {})
    if isinstance(stamp, dict):
        users = stamp.setdefault("saved_by", [])
        if isinstance(users, list) and USER not in users:
            users.append(USER)


c.ContentsManager.pre_save_hook = stamp_saved_by
c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"
