"""Reading the arrays a user hands to the CLI (``--input``, ``--calibration``): one array saved by
``numpy.save``. Why a check of its own: numpy says "pickled data" of a text file, and returns an
archive object for an ``.npz``, which would fail later, far from the flag that named it."""

from __future__ import annotations

from tokenize import TokenError
from typing import TYPE_CHECKING

from costmodel.errors import UserError

if TYPE_CHECKING:
    import numpy as np

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK"  # an .npz is a zip archive


def read_npy(path: str, flag: str) -> np.ndarray:
    """The array in ``path``; anything else is a UserError that starts with ``flag``."""
    import numpy as np

    try:
        with open(path, "rb") as f:
            head = f.read(len(NPY_MAGIC))
            if head != NPY_MAGIC:
                kind = "an .npz archive (several arrays)" if head.startswith(ZIP_MAGIC) else "not a .npy file"
                raise UserError(f"{flag}: {path} is {kind}; expected one array saved with numpy.save (.npy)")
            f.seek(0)
            return np.load(f, allow_pickle=False)
    except OSError as exc:
        raise UserError(f"{flag}: cannot read {path} ({exc.strerror or exc})") from None
    except (ValueError, SyntaxError, TokenError, MemoryError) as exc:  # a damaged header (or one that claims
        # an impossible shape), object (pickled) data
        raise UserError(f"{flag}: {path} is not a readable .npy array ({exc or type(exc).__name__})") from None
