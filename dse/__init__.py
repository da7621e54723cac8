"""accel-dse: design-space exploration for AR/VR deep-learning accelerators.

The public Python API is in :mod:`dse.api`; the ``dse`` command is :mod:`dse.cli`.
"""

__version__ = "0.1.0"
