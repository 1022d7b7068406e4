"""What the supported Pythons and NumPys differ in, in one place.

``assert_never`` is ``typing``'s from Python 3.11 (the ``match`` dispatches' exhaustiveness
check); on 3.10 the same function, written here.

>>> assert_never.__name__
'assert_never'
"""

from __future__ import annotations

import sys
from typing import NoReturn

__all__ = ["assert_never"]

if sys.version_info >= (3, 11):
    from typing import assert_never
else:  # pragma: no cover (the CI runs 3.11)

    def assert_never(value: NoReturn, /) -> NoReturn:
        """Fail for a case a ``match`` left unhandled (mypy: the value's type is then not
        ``NoReturn``)."""
        raise AssertionError(f"Expected code to be unreachable, but got: {value!r}")
