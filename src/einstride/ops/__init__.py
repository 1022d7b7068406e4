"""Tensor operations with TensorFlow semantics (see docs/ops.md)."""

__all__: list[str] = []
