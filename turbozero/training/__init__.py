"""Training: self-play collector, replay, losses, trainer, evaluation, checkpoints, metrics.

The names below load their module on first use (PEP 562 `__getattr__`), so importing one
training module (a game's package imports `turbozero.training.types`, say) runs this `__init__`
without loading the loop, which imports every game's spec: eager, it made `turbozero.games`
and `turbozero.training` import each other (docs/architecture.md, "Imports")."""

import importlib

# name -> the module that defines it (tests/search/test_search_api.py reads this dict: an import
# of one of these names is an import of its module)
_LAZY_EXPORTS = {
    "Experience": "turbozero.training.types",
    "LoopState": "turbozero.training.loop",
    "MetricsWriter": "turbozero.training.metrics",
    "TrainConfig": "turbozero.training.config",
    "TrainState": "turbozero.training.types",
    "Trainer": "turbozero.training.loop",
    "az_loss_fn": "turbozero.training.loss_fns",
    "az_loss_fn_4way": "turbozero.training.loss_fns",
    "four_way_value_loss": "turbozero.training.loss_fns",
    "make_mesh": "turbozero.training.loop",
    "outcome_to_wdl": "turbozero.training.loss_fns",
    "plot_metrics": "turbozero.training.metrics",
    "policy_cross_entropy": "turbozero.training.loss_fns",
    "read_metrics": "turbozero.training.metrics",
    "scalar_value_loss": "turbozero.training.loss_fns",
    "wdl_value_loss": "turbozero.training.loss_fns",
}


def __getattr__(name: str):
    if name not in _LAZY_EXPORTS:
        raise AttributeError(f"module 'turbozero.training' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY_EXPORTS[name]), name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY_EXPORTS))


__all__ = sorted(_LAZY_EXPORTS)
