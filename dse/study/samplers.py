"""Samplers whose choice for a trial depends only on (seed, trial number, history), never on what
the process did before: so a study killed and resumed samples exactly what an uninterrupted run
would have (the resumed trial keeps its number; see ``runner``).

- ``grid``: trial ``n`` takes point ``perm[n]`` of a seeded permutation of the full grid.
- ``random``: trial ``n`` draws from ``default_rng([seed, n, crc32(knob)])``.
- ``tpe`` / ``nsga2``: optuna's samplers, rebuilt for each trial with the seed ``(seed * 100003 + n) mod 2**32``
  (and for each parameter drawn independently, with a seed from ``(seed, n, name)``, so that a
  resumed trial that already holds some parameters draws the others as before), reading only the
  history ``0 .. n - lag`` (:mod:`dse.study.history`). So the draw depends on the numbers alone, not
  on the number of workers or on timing; NSGA-II's generation ``g`` is bred from the first
  ``population`` finished trials of generation ``g - 1``, which every history that breeds ``g`` holds.
"""

from __future__ import annotations

import itertools
import threading
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from dse.study.history import LaggedView, wait_for_history
from dse.study.knobs import Knob


class _Independent(BaseSampler):
    """Base for samplers that pick each parameter from (trial number, name) alone."""

    def infer_relative_search_space(self, study: Any, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return {}

    def sample_relative(self, study: Any, trial: FrozenTrial, search_space: dict) -> dict[str, Any]:
        return {}


class GridSampler(_Independent):
    def __init__(self, knobs: Sequence[Knob], seed: int) -> None:
        self.names = [k.name for k in knobs]
        self.points = list(itertools.product(*(k.grid_values() for k in knobs)))
        self.perm = np.random.default_rng(seed).permutation(len(self.points))

    def point(self, number: int) -> dict[str, Any]:
        return dict(zip(self.names, self.points[int(self.perm[number % len(self.points)])], strict=True))

    def sample_independent(self, study: Any, trial: FrozenTrial, name: str, dist: BaseDistribution) -> Any:
        return self.point(trial.number)[name]


class RandomSampler(_Independent):
    def __init__(self, seed: int) -> None:
        self.seed = seed

    def sample_independent(self, study: Any, trial: FrozenTrial, name: str, dist: BaseDistribution) -> Any:
        rng = np.random.default_rng([self.seed, trial.number, zlib.crc32(name.encode())])
        if isinstance(dist, CategoricalDistribution):
            return dist.choices[int(rng.integers(len(dist.choices)))]
        if isinstance(dist, (IntDistribution, FloatDistribution)):
            lo, hi = dist.low, dist.high
            if dist.log:
                v = float(np.exp(rng.uniform(np.log(lo), np.log(hi))))
                return min(max(round(v), lo), hi) if isinstance(dist, IntDistribution) else v
            if dist.step is not None:
                n = round((hi - lo) / dist.step)
                v = lo + dist.step * int(rng.integers(n + 1))
                return int(v) if isinstance(dist, IntDistribution) else float(v)
            return float(rng.uniform(lo, hi))
        raise TypeError(f"unsupported distribution {dist!r}")


class ReseededSampler(BaseSampler):
    """Delegates to ``factory(seed)`` with a seed derived from the trial number, on the history
    ``0 .. n - lag`` (waiting for it to finish)."""

    def __init__(self, factory: Callable[[int], BaseSampler], seed: int, lag: int = 1) -> None:
        self.factory, self.seed, self.lag = factory, seed, lag
        self._cache: dict[int, BaseSampler] = {}
        self._ready: set[int] = set()  # trials whose history has finished (it stays finished; an int a trial)
        self._lock = threading.Lock()

    def _inner(self, number: int) -> BaseSampler:
        with self._lock:  # (optuna's n_jobs calls from threads)
            if number not in self._cache:
                if len(self._cache) > 8:
                    self._cache.pop(next(iter(self._cache)))
                # (within numpy's seed range: a seed of 42,950 or more had overflowed it)
                self._cache[number] = self.factory((self.seed * 100003 + number) % 2**32)
            return self._cache[number]

    def _history(self, study: Any, trial: FrozenTrial) -> LaggedView:
        """The trial's history, once finished (each hook of a trial asks; the first one waits)."""
        if trial.number not in self._ready:
            wait_for_history(study, trial, self.lag)
            with self._lock:
                self._ready.add(trial.number)
        return LaggedView(study, trial.number - self.lag)

    def infer_relative_search_space(self, study: Any, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self._inner(trial.number).infer_relative_search_space(self._history(study, trial), trial)

    def sample_relative(self, study: Any, trial: FrozenTrial, search_space: dict) -> dict[str, Any]:
        return self._inner(trial.number).sample_relative(self._history(study, trial), trial, search_space)

    def sample_independent(self, study: Any, trial: FrozenTrial, name: str, dist: BaseDistribution) -> Any:
        # a sampler per (trial, parameter): one instance's draws would depend on which of the
        # trial's parameters it drew before, and a trial resumed after a kill already holds some
        seed = zlib.crc32(f"{self.seed}:{trial.number}:{name}".encode())
        return self.factory(seed).sample_independent(self._history(study, trial), trial, name, dist)

    def before_trial(self, study: Any, trial: FrozenTrial) -> None:
        self._inner(trial.number).before_trial(self._history(study, trial), trial)

    def after_trial(self, study: Any, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None) -> None:
        self._inner(trial.number).after_trial(LaggedView(study, trial.number - self.lag), trial, state, values)


class NSGAII(optuna.samplers.NSGAIISampler):
    """optuna's NSGA-II with each generation's population fixed: the first ``population_size``
    trials of it (by number) that completed. optuna takes all that completed so far, which with
    several workers depends on timing; one worker completes exactly that many before the next
    generation starts, so a serial run is unchanged. Parents come in trial order (optuna returns
    them in selection order to the trial that selects them, in trial order to the others)."""

    def get_parent_population(self, study: Any, generation: int) -> list[FrozenTrial]:
        return sorted(super().get_parent_population(study, generation), key=lambda t: t.number)

    def get_population(self, study: Any, generation: int) -> list[FrozenTrial]:
        key = self._get_generation_key()
        done = [t for t in study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,), use_cache=True)
                if t.system_attrs.get(key) == generation]
        return sorted(done, key=lambda t: t.number)[:self.population_size]


# the keys optuna's NSGAIISampler stores generations under (a subclass would get its own name's)
NSGAII._GENERATION_KEY = optuna.samplers.NSGAIISampler._GENERATION_KEY
NSGAII._PARENT_CACHE_KEY_PREFIX = optuna.samplers.NSGAIISampler._PARENT_CACHE_KEY_PREFIX


def make_sampler(kind: str, knobs: Sequence[Knob], seed: int, population: int = 20, lag: int = 1) -> BaseSampler:
    if kind == "grid":
        return GridSampler(knobs, seed)
    if kind == "random":
        return RandomSampler(seed)
    if kind == "tpe":
        return ReseededSampler(lambda s: optuna.samplers.TPESampler(seed=s), seed, lag)
    if kind == "nsga2":
        return ReseededSampler(lambda s: NSGAII(seed=s, population_size=population), seed, lag)
    raise ValueError(f"unknown sampler {kind!r}")
