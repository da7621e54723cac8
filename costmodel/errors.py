"""The one exception type for a user's mistake (bad file, bad field, impossible request).

The CLI turns it into one line on stderr and exit status 2; anything else is a bug and keeps its
traceback.
"""


class UserError(Exception):
    """A mistake in the user's input; the message says what, where, and what was expected."""


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
