"""A run that cannot learn stops: an iteration whose every update was skipped as non-finite.

A step whose loss, gradients or updated parameters are not finite changes nothing
(`updates.train_step`), which saves the network from one bad batch; but when every step of an
iteration is skipped, the run trains nothing and would print `nan` for as long as it runs.
`Trainer.run` then raises `NonFiniteTraining` after the iteration is recorded
(`stop_on_nonfinite=False`, `turbozero train --allow-nonfinite`, trains on;
docs/training.md, "Refusals").
"""

from __future__ import annotations

import math
from typing import Any, Optional


def untrained_reason(record: dict[str, Any], train_steps: int) -> Optional[str]:
    """Why the iteration of `record` (a metrics record) trained nothing, or None when it
    trained or had nothing to train on (no finished game in the replay yet: no `loss`)."""
    if "loss" not in record:
        return None
    skipped = int(record.get("skipped_nonfinite", 0))
    if skipped >= train_steps:
        return f"all {train_steps} of its updates were skipped as non-finite"
    loss = record["loss"]
    if not math.isfinite(loss):  # a loss of one's own that reports no skipped steps
        return f"its loss is {loss}"
    return None


class NonFiniteTraining(ValueError):
    """`Trainer.run` stopped after an iteration that trained nothing (`untrained_reason`):
    `iteration` is that iteration (recorded in metrics.jsonl), `checkpoint` the newest
    checkpoint's iteration (None: none), `run_dir` the run directory (None: none)."""

    def __init__(self, iteration: int, reason: str, checkpoint: Optional[int],
                 run_dir: Optional[str]):
        self.iteration, self.reason = iteration, reason
        self.checkpoint, self.run_dir = checkpoint, run_dir
        super().__init__(self.message())

    def message(self) -> str:
        where = ""
        if self.run_dir is not None:
            where = (f"; {self.run_dir} holds no checkpoint" if self.checkpoint is None else
                     f"; {self.run_dir} resumes from the checkpoint of iteration "
                     f"{self.checkpoint}")
        return (f"iteration {self.iteration} trained nothing: {self.reason} (a NaN or infinite "
                "loss, gradient or updated parameter: a learning rate too large, NaN rewards "
                f"or inputs), so the run stops{where}; lower optimizer.learning_rate or mend "
                "the input, or train on with --allow-nonfinite "
                "(Trainer.run(stop_on_nonfinite=False))")
