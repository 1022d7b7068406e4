"""Hypothesis profiles for the whole suite.

The default profile only drops hypothesis' per-example deadline (timings on a shared machine
are noise, not failures).  ``EINSTRIDE_FUZZ=1`` (``make fuzz``) loads the "fuzz" profile:
many more examples for every test that does not fix its own count, and longer stress loops
in tests/hardening (which read the same variable).
"""

from __future__ import annotations

import os

from hypothesis import settings

FUZZ = bool(os.environ.get("EINSTRIDE_FUZZ"))

settings.register_profile("einstride", deadline=None)
settings.register_profile("einstride-fuzz", deadline=None, max_examples=2500)
settings.load_profile("einstride-fuzz" if FUZZ else "einstride")
