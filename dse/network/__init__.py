"""Whole-network mapping: ``map_model`` (every layer of a workload) and ``best_mapping`` (one layer),
both backed by the mapping database (:mod:`dse.mapdb`)."""

from dse.network.model import best_mapping, map_model
from dse.network.result import LayerResult, NetworkResult

__all__ = ["LayerResult", "NetworkResult", "best_mapping", "map_model"]
