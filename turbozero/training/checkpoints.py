"""orbax checkpoints of the whole loop state, in a run directory the library owns.

A run directory holds `turbozero_run.json` (the game, network and config that made it),
`checkpoints/<step>/` (orbax) and `metrics.jsonl`. The library refuses to write into a non-empty
directory without that marker, and refuses to resume a run of another game or network shape;
orbax's `max_to_keep` only ever removes checkpoints inside `checkpoints/`, which we created.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional

import jax
import orbax.checkpoint as ocp

MARKER = "turbozero_run.json"


def _shapes(tree: Any) -> dict[str, list[int]]:
    flat, _ = jax.tree_util.tree_flatten_with_path(tree)
    return {jax.tree_util.keystr(p): list(x.shape) for p, x in flat}


class RunDirectory:
    """Owns one run directory: its marker, its checkpoints and its metrics file."""

    def __init__(self, path: str, identity: dict[str, Any], params: Any, *, resume: bool, max_to_keep: int = 3):
        self.path = os.path.abspath(path)
        self.identity = dict(identity, param_shapes=_shapes(params))
        marker = os.path.join(self.path, MARKER)
        if os.path.isdir(self.path) and os.listdir(self.path):
            if not os.path.exists(marker):
                raise ValueError(
                    f"{self.path} exists, is not empty and was not created by turbozero; "
                    "choose another run directory"
                )
            with open(marker, encoding="utf-8") as f:
                found = json.load(f)
            for field in ("game", "network"):
                if found.get(field) != self.identity.get(field):
                    raise ValueError(
                        f"{self.path} holds a run with {field}={found.get(field)!r}, "
                        f"not {self.identity.get(field)!r}"
                    )
            if found.get("param_shapes") != self.identity["param_shapes"]:
                raise ValueError(f"{self.path} holds a run with other network parameter shapes")
            if not resume and self._has_checkpoints():
                raise ValueError(
                    f"{self.path} already holds checkpoints: pass resume=True (--resume) to "
                    "continue it, or choose another run directory"
                )
        else:
            os.makedirs(self.path, exist_ok=True)
            with open(marker, "w", encoding="utf-8") as f:
                json.dump(self.identity, f, indent=1, sort_keys=True)
        self.manager = ocp.CheckpointManager(
            os.path.join(self.path, "checkpoints"),
            options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True),
        )

    def _has_checkpoints(self) -> bool:
        d = os.path.join(self.path, "checkpoints")
        return os.path.isdir(d) and any(n.isdigit() for n in os.listdir(d))

    @property
    def metrics_path(self) -> str:
        return os.path.join(self.path, "metrics.jsonl")

    def latest_step(self) -> Optional[int]:
        return self.manager.latest_step()

    def save(self, step: int, tree: Any) -> None:
        self.manager.save(step, args=ocp.args.StandardSave(tree))
        self.manager.wait_until_finished()

    def restore(self, like: Any, step: Optional[int] = None) -> Any:
        """Restore into the structure (and shardings) of `like`."""
        step = self.latest_step() if step is None else step
        if step is None:
            raise ValueError(f"no checkpoint in {self.path}")
        abstract = jax.tree_util.tree_map(ocp.utils.to_shape_dtype_struct, like)
        return self.manager.restore(step, args=ocp.args.StandardRestore(abstract))

    def close(self) -> None:
        self.manager.close()
