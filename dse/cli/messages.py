"""How the commands print what is not an error: Python's warnings as ``warning: ...`` lines."""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator


@contextlib.contextmanager
def user_warnings_as_lines() -> Iterator[None]:
    """The block's UserWarnings as one ``warning: ...`` line each on stderr (not Python's two-line
    ``file:line: UserWarning`` form), printed even when the block fails: a warning such as
    "symbolic input dims fixed to 1" may be the cause of the error that follows."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            yield
        finally:
            for w in caught:
                if issubclass(w.category, UserWarning):
                    print(f"warning: {w.message}", file=sys.stderr)
                else:  # RuntimeWarning, DeprecationWarning...: as Python shows them, not dropped
                    warnings.showwarning(w.message, w.category, w.filename, w.lineno)
