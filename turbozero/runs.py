"""A run directory's `TrainConfig`: the one it stored (`training/run_config.py`), or, for a run
made before configs were stored, the preset and overrides its `cli.json` recorded
(`training/migration.py` reads that layout; the preset comes from `turbozero.presets`, which
sits above training, so this module does too)."""

from __future__ import annotations

import json
import os
from typing import Any, Sequence

from turbozero.presets import get_preset
from turbozero.training import migration
from turbozero.training.checkpoints import MARKER, read_marker
from turbozero.training.run_config import config_from_json, parse_overrides, with_overrides


def load_run_config(run_dir: str) -> Any:
    """The `TrainConfig` a run directory holds (made by `turbozero train` or by
    `Trainer(config, run_dir=...)`); runs made before configs were stored are read from the
    preset and overrides their `cli.json` recorded."""
    if not os.path.isdir(run_dir):
        raise ValueError(f"{run_dir} is a file, not a run directory" if os.path.exists(run_dir)
                         else f"{run_dir} does not exist")
    marker = read_marker(run_dir)
    if "config" in marker:
        try:
            return config_from_json(marker["config"])
        except (ValueError, TypeError, KeyError, AttributeError) as err:  # the file named
            why = str(err) if isinstance(err, ValueError) else f"{type(err).__name__}: {err}"
            raise ValueError(f"{os.path.join(run_dir, MARKER)} holds a config that cannot be "
                             f"read: {why}") from None
    made = os.path.join(run_dir, "cli.json")
    if os.path.exists(made):
        with open(made, encoding="utf-8") as f:
            return migration.config_from_cli_json(json.load(f), get_preset)
    raise ValueError(f"{run_dir} was made by a turbozero that did not store the run's config; "
                     "train it again to evaluate or resume it")


def evaluation_config(run_dir: str, games: int | None = None, pairs: Sequence[str] = ()) -> Any:
    """The config to evaluate a run with: its stored config, `eval_games = games` when given,
    then the `KEY=VALUE` overrides in `pairs` (`turbozero eval --set`); the run is not changed."""
    config = load_run_config(run_dir)
    if games is not None:
        config = with_overrides(config, {"eval_games": games})
    if pairs:
        config = with_overrides(config, parse_overrides(config, pairs))
    return config
