"""Analytical cost model: problems (einsum loop nests), architectures, mappings, and their evaluation.

Imports nothing else of accel-dse, so it can be used on its own.
"""

from costmodel.errors import UserError
from costmodel.problem import Problem, Tensor

__all__ = ["Problem", "Tensor", "UserError"]
