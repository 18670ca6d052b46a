"""Argument checks that name the bad argument and say what would work."""
from .language import message


def require_positive_int(name, value):
    """Raise ValueError unless `value` is a whole number >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(message("{name} must be a whole number >= 1, got {value!r}", name=name, value=value))
    return value
