"""Training: self-play collector, replay, losses, trainer, evaluation, checkpoints, metrics."""

from turbozero.training.loss_fns import (
    az_loss_fn,
    az_loss_fn_4way,
    four_way_value_loss,
    outcome_to_wdl,
    policy_cross_entropy,
    scalar_value_loss,
    wdl_value_loss,
)
from turbozero.training.loop import LoopState, TrainConfig, Trainer, make_mesh
from turbozero.training.metrics import MetricsWriter, plot_metrics, read_metrics
from turbozero.training.types import Experience, TrainState

__all__ = [
    "Experience", "LoopState", "MetricsWriter", "TrainConfig", "TrainState", "Trainer",
    "az_loss_fn", "az_loss_fn_4way", "four_way_value_loss", "make_mesh", "outcome_to_wdl",
    "plot_metrics", "policy_cross_entropy", "read_metrics", "scalar_value_loss",
    "wdl_value_loss",
]
