"""The arguments a Python caller passes to a mapping search (``map_layer``, ``map_model``,
``best_mapping``), checked before any work: a misspelt option or an out-of-range value is a
UserError that names it, not a TypeError from deep in the cost model or a search that runs on
nonsense (a budget of -1 evaluations, a negative time limit). The CLI and study files check their own
flags; these models are the same rules for the library. The defaults stay in the mappers'
signatures: only the options given are checked and passed on."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, ValidationError

from costmodel.errors import UserError
from costmodel.problem import as_int

SEED_MAX = 2**32 - 1
"""numpy's seed range, as the CLI's --seed."""


def _not_text(v: Any) -> Any:
    """A number given as text or a boolean is a mistake, not a number to coerce (as run_study's
    ``trials`` and the CLI's flags refuse it)."""
    if isinstance(v, (str, bytes, bool, np.bool_)):
        raise ValueError(f"expected a number, got {v!r:.40}")  # noqa: TRY004 (pydantic reports a ValueError)
    return v


Int = Annotated[int, BeforeValidator(_not_text)]
Float = Annotated[float, BeforeValidator(_not_text)]


class _SearchOptions(BaseModel):
    """Options of both mappers: a time limit, and how the cost model times a mapping."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    time_limit_s: Float | None = Field(None, gt=0, description="Stop the search after this many seconds.")
    overlap: StrictBool | None = Field(None, description="Double buffering hides transfers (the latency model).")
    systolic_mode: Literal["scalesim", "overlapped"] | None = Field(None, description="Fold model of a systolic config.")


class FastOptions(_SearchOptions):
    """The fast mapper's options (:func:`dse.mappers.fast.fast_map`)."""

    max_evaluations: Int = Field(None, gt=0, description="Cost-model evaluations to spend.")
    population: Int = Field(None, ge=2, description="Candidates per generation.")
    elite: Int = Field(None, ge=1, description="Candidates kept per generation.")
    explore: Float = Field(None, gt=0, le=1, description="Share of the budget for the evolution phase.")
    generations: Int = Field(None, ge=0, description="Generations of the evolution phase at most.")
    starts: Int = Field(None, ge=1, description="Walkers of the descent phase.")
    width: Int = Field(None, ge=1, description="Moves a walker tries per step.")
    patience: Int = Field(None, ge=1, description="Kicks in a row without a gain before the descent stops.")
    victory: Int | None = Field(None, ge=1, description="Stop after this many evaluations without a gain.")


class ExhaustiveOptions(_SearchOptions):
    """The exhaustive mapper's options (:func:`dse.mappers.exhaustive.exhaustive_map`)."""

    prune: StrictBool = Field(None, description="Skip the regions whose lower bound cannot win.")
    batch_size: Int = Field(None, ge=1, description="Mappings per cost-model batch.")
    chunk: Int = Field(None, ge=1, description="Tilings bounded at a time.")


_MODELS: dict[str, type[_SearchOptions]] = {"fast": FastOptions, "exhaustive": ExhaustiveOptions}
MAPPERS = tuple(_MODELS)
"""The mappers' names."""


def check_seed(seed: Any) -> int:
    """``seed`` as an int in numpy's range, or a UserError."""
    if as_int(seed) is None or not 0 <= seed <= SEED_MAX:
        raise UserError(f"seed: expected an integer from 0 to {SEED_MAX}, got {seed!r}")
    return int(seed)


def check_mapper(mapper: Any) -> str:
    """``mapper`` if it names a mapper (a UserError listing them otherwise)."""
    if not isinstance(mapper, str) or mapper not in _MODELS:
        raise UserError(f"mapper: expected one of {list(MAPPERS)}, got {mapper!r}")
    return mapper


def check_options(mapper: str, options: dict[str, Any]) -> dict[str, Any]:
    """The options given for ``mapper`` (one of the keys of ``_MODELS``: the caller has checked the
    name), as plain Python values; a UserError names the first bad one."""
    model = _MODELS[mapper]
    try:
        return model(**options).model_dump(exclude_unset=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        name = ".".join(str(x) for x in err["loc"])
        if err["type"] == "extra_forbidden":
            known = ", ".join(model.model_fields)
            raise UserError(f"mapper option {name!r}: not an option of the {mapper} mapper "
                            f"(its options: {known})") from None
        msg = err["msg"].removeprefix("Value error, ")
        msg = msg[:1].lower() + msg[1:]
        raise UserError(f"mapper option {name!r} = {err['input']!r}: {msg}") from None


def check_workers(workers: Any) -> int | None:
    """``workers`` for :func:`dse.network.map_model`: None (one per core) or a positive int (more than
    the cores count as one per core)."""
    if workers is None:
        return None
    if as_int(workers) is None or workers < 1:
        raise UserError(f"workers: expected a positive integer (or None: one per core), got {workers!r}")
    return int(workers)
