"""The error types of einstride: two families, both ``ValueError`` subclasses, and the
subclasses that are also the exception NumPy raises for the same input.

>>> issubclass(LayoutError, ValueError) and issubclass(EinsumError, ValueError)
True
"""

from __future__ import annotations

__all__ = ["EinsumError", "EinsumPathError", "EinsumTypeError", "LayoutError"]


class LayoutError(ValueError):
    """A shape/strides/offset that is invalid, or a data movement the overlap rules forbid."""


class EinsumError(ValueError):
    """A malformed einsum equation, or operands that do not fit it."""


class EinsumTypeError(EinsumError, TypeError):
    """An einsum argument of the wrong kind where NumPy raises ``TypeError`` (a sublist that
    is not a list, a label that is not an int): both ``except EinsumError`` and
    ``except TypeError`` catch it.

    >>> import numpy as np, einstride as es
    >>> try:
    ...     es.einsum(np.ones(2), ["a"], [0])
    ... except TypeError as exc:
    ...     isinstance(exc, es.EinsumError)
    True
    """


class EinsumPathError(EinsumError, RuntimeError):
    """An explicit contraction path that does not contract every operand to one, where NumPy
    raises ``RuntimeError``; it is an :class:`EinsumError` too."""
