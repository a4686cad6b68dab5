"""Paco Ŝako in training: its `GameSpec` (`SPEC`), collected in `turbozero.games.GAMES`, and
its presets in `turbozero.games.pacosako.presets`. The rules are `envs.pacosako`."""

from __future__ import annotations

from turbozero.games.spec import GameSpec
from turbozero.networks.value_formats import WDLValue

SPEC = GameSpec("pacosako", WDLValue(), "resnet", "WDL value head")
