"""Placeholder: filled by the core data-movement work (issue 2)."""

__all__: list[str] = []
