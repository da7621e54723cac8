"""How the commands print what is not an error: Python's warnings as ``warning: ...`` lines."""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from typing import TextIO


@contextlib.contextmanager
def user_warnings_as_lines() -> Iterator[set[str]]:
    """The block's UserWarnings as one ``warning: ...`` line each on stderr (not Python's two-line
    ``file:line: UserWarning`` form), printed when issued: before a long sweep, not after it, and
    before an error they may explain ("symbolic input dims fixed to 1"); each text once (a model
    is lowered twice by `dse compile`). Yields the set of texts shown, so a summary printed later
    can leave them out."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", UserWarning)
        python_form = warnings.showwarning
        shown: set[str] = set()

        def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: TextIO | None = None, line: str | None = None) -> None:
            if issubclass(category, UserWarning):
                if str(message) not in shown:
                    shown.add(str(message))
                    print(f"warning: {message}", file=sys.stderr)
            else:  # RuntimeWarning, DeprecationWarning...: as Python shows them, not dropped
                python_form(message, category, filename, lineno, file, line)

        warnings.showwarning = show  # (catch_warnings puts Python's back on exit)
        yield shown
