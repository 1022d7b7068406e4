"""The two error types of einstride; both are ``ValueError`` subclasses.

>>> issubclass(LayoutError, ValueError) and issubclass(EinsumError, ValueError)
True
"""

from __future__ import annotations

__all__ = ["EinsumError", "LayoutError"]


class LayoutError(ValueError):
    """A shape/strides/offset that is invalid, or a data movement the overlap rules forbid."""


class EinsumError(ValueError):
    """A malformed einsum equation, or operands that do not fit it."""
