"""The mapspace: tilings (ordered factorizations over temporal and spatial slots), loop-order classes
that can change reuse, keep/bypass choices, all under the config's and the user's constraints."""

from dse.mapspace.space import Mapspace, MapspaceSize

__all__ = ["Mapspace", "MapspaceSize"]
