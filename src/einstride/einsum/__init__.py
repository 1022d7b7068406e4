"""The einsum engine: equation -> spec -> plan -> execution (see docs/einsum.md)."""

__all__: list[str] = []
