"""The one exception type for a user's mistake (bad file, bad field, impossible request).

The CLI turns it into one line on stderr and exit status 2; anything else is a bug and keeps its
traceback.
"""


class UserError(Exception):
    """A mistake in the user's input; the message says what, where, and what was expected."""
