"""Argument checks that name the bad argument and say what would work."""


def require_positive_int(name, value):
    """Raise ValueError unless `value` is a whole number >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    return value
