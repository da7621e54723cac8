"""Design-space studies: a study YAML (``schema``) of hardware knobs (``knobs``), run on optuna
(``runner``) trial by trial (``design``), with results tables and Pareto sets (``results``,
``pareto``). See docs/studies.md."""

from dse.study.runner import SweepResult, load_study_dir, run_study
from dse.study.schema import Study, load_study

__all__ = ["Study", "SweepResult", "load_study", "load_study_dir", "run_study"]
