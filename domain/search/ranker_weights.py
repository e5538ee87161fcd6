"""The second-stage ranker's fitted numbers, read once from the package data beside this module.

The only domain module that reads a file: its own package's `ranker_weights.json` (written by
`bench/research/ltr.py --write`), on the first search that ranks, never at import.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

from attrs import frozen

WEIGHTS_FILE = "ranker_weights.json"  # package data of this package, written by bench/research/ltr.py --write


@frozen
class RankerModel:
    """The model's fitted numbers: per feature its training range (LOW … HIGH), mean and spread, then the weights
    (the linear ones, then each pair's a ≤ b in row order) and the bias."""

    features: tuple[str, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    mean: tuple[float, ...]
    spread: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float


@functools.cache
def fitted_model() -> RankerModel:
    """The fitted model, read from the package's data once, on the first search that ranks (not at import)."""
    raw = json.loads(resources.files(__package__).joinpath(WEIGHTS_FILE).read_text(encoding="utf-8"))
    numbers = {key: tuple(float(v) for v in raw[key]) for key in ("low", "high", "mean", "spread", "weights")}
    return RankerModel(features=tuple(str(name) for name in raw["features"]), bias=float(raw["bias"]), **numbers)
