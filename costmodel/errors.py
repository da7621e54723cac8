"""The one exception type for a user's mistake (bad file, bad field, impossible request).

The CLI turns it into one line on stderr and exit status 2; anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

from collections.abc import Iterator


class UserError(Exception):
    """A mistake in the user's input; the message says what, where, and what was expected."""


def causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, then each exception it was raised from or while handling, in turn (each once). Why:
    libraries wrap the error that matters in their own (torch.export a Ctrl-C, optuna a full disk)."""
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        seen.add(id(at))
        yield at
        at = at.__cause__ or at.__context__


def placed(exc: UserError, where: str) -> UserError:
    """``exc``'s message led by ``where`` (a file and line, a node), unless it already starts with it:
    for a message raised by code that does not know where its input came from."""
    text = str(exc)
    return UserError(text if text.startswith(where) else f"{where}: {text}")


class FieldError(UserError):
    """A mistake in one field (a layer's ``stride``, a config's ``levels[1].capacity``); ``path`` says
    where, so the code that knows the file can add it and the field's line."""

    def __init__(self, path: str | tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path: tuple[str | int, ...] = (path,) if isinstance(path, str) else tuple(path)
