"""`make bench`: see __main__.py. Figures 1-2 in notebooks.py, 3-5 in training.py."""
