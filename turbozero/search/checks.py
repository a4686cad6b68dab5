"""What `turbozero.search.search` checks before a family runs (docs/search.md, "What search
checks").

At trace time, on shapes only (no device work): the states are a batch (a leading axis B on
every field, the legal mask `[B, A]`, or `[B, P, A]` for a simultaneous game), and a network
evaluator maps a batch of the states' observations to policy logits `[B, env.num_actions]`
and a value output its value format can read. A mistake there used to fail deep inside JAX
(a broadcasting error in the tree's update, a gather out of range) or not at all.

Under the debug switch `TURBOZERO_CHECK_EVALUATOR=1` (read when the search is traced), every
call of the network inside the search is also checked on the host: NaN policy logits or a NaN
or infinite value stop the search with one line naming what was not finite, at how many of the
batch's positions and the first of them (without the switch, a NaN value gives a NaN root value
and action 0, silently). The check costs a device-to-host copy per network call and the
functions it is traced into cannot be stored (stored functions are off while it is on).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Any, Callable, Optional

import jax
import numpy as np

ENV_VAR = "TURBOZERO_CHECK_EVALUATOR"
# the start of the line the host check raises: found again in the runtime error jax wraps it in
MARK = "turbozero evaluator check: "


def evaluator_checks_enabled() -> bool:
    """Whether `TURBOZERO_CHECK_EVALUATOR` asks for the host checks of non-finite outputs."""
    return os.environ.get(ENV_VAR, "").strip().lower() not in ("", "0", "off", "false", "none")


class NonFiniteEvaluation(ValueError):
    """The evaluator returned NaN logits or a non-finite value (under the debug switch)."""


def _shape(x: Any) -> Any:
    return getattr(x, "shape", None)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def check_batch(env: Any, states: Any) -> int:
    """B, the batch size of `states`; ValueError (one line) if they are not a batch of the
    env's states."""
    player = getattr(states, "current_player", None)
    legal = getattr(states, "legal_action_mask", None)
    if player is None or legal is None:
        raise ValueError(f"search: states must be a batch of {env.id} states (with "
                         f"current_player and legal_action_mask), got {type(states).__name__}")
    legal_ndim = 3 if env.is_simultaneous else 2
    if np.ndim(player) != 1 or np.ndim(legal) != legal_ndim:
        raise ValueError(
            f"search: states must be a batch of {env.id} states with a leading batch axis B; "
            f"current_player has shape {tuple(_shape(player))} and legal_action_mask "
            f"{tuple(_shape(legal))}: add the axis (jax.tree_util.tree_map(lambda x: x[None], "
            "state)) or build them with jax.vmap(env.init)(keys)")
    batch = int(player.shape[0])
    if legal.shape[0] != batch or legal.shape[-1] != env.num_actions:
        raise ValueError(f"search: legal_action_mask has shape {tuple(legal.shape)}; {env.id} "
                         f"has {env.num_actions} actions and the batch {batch} states")
    for path, leaf in jax.tree_util.tree_flatten_with_path(states)[0]:
        shape = _shape(leaf)
        if shape is not None and (len(shape) == 0 or shape[0] != batch):
            raise ValueError(f"search: the states' field {jax.tree_util.keystr(path)} has shape "
                             f"{tuple(shape)}, not a leading batch axis of {batch} like "
                             "current_player")
    return batch


def check_evaluator(env: Any, evaluator: Any, variables: Any, states: Any, batch: int) -> None:
    """ValueError (one line) unless `evaluator.apply_fn(variables, observations)` gives policy
    logits float[B, env.num_actions] and a value output of the shape its value format's head
    gives for B positions. Shapes only (`jax.eval_shape`): nothing runs. (Whether the format
    suits the game's player count is the family's check: mctx reads a mover's scalar only.)"""
    obs = getattr(states, "observation", None)
    if obs is None:
        obs = jax.eval_shape(jax.vmap(env.observe), states)
    try:
        out = jax.eval_shape(evaluator.apply_fn, variables, obs)
    except Exception as err:  # noqa: BLE001 - whatever the network raises, said in one line
        raise ValueError(f"search: the evaluator fails on a batch of observations of shape "
                         f"{tuple(obs.shape)}: {type(err).__name__}: {_first_line(err)}") from err
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise ValueError("search: the evaluator's apply_fn must return (policy_logits, "
                         f"value_output), got {jax.tree_util.tree_structure(out)}")
    logits, value_out = out
    want = (batch, env.num_actions)
    if _shape(logits) != want:
        raise ValueError(f"search: the evaluator's policy logits have shape "
                         f"{tuple(_shape(logits) or ())} for a batch of {batch} states; {env.id} "
                         f"has {env.num_actions} actions, so {list(want)} is expected")
    if not np.issubdtype(logits.dtype, np.floating):
        raise ValueError(f"search: the evaluator's policy logits are {logits.dtype}, not floats")
    value_shape = _shape(value_out)
    if not value_shape or value_shape[0] != batch:
        raise ValueError(f"search: the evaluator's value output has shape "
                         f"{tuple(value_shape or ())}; a leading batch axis of {batch} is "
                         "expected")
    fmt = evaluator.value_format
    expected = jax.eval_shape(fmt.activate, jax.ShapeDtypeStruct((batch, fmt.out_size),
                                                                 np.float32)).shape
    if tuple(value_shape) != tuple(expected):
        raise ValueError(f"search: the evaluator's value output has shape {tuple(value_shape)}; "
                         f"its value format {fmt.name or type(fmt).__name__} gives "
                         f"{tuple(expected)} for a batch of {batch}")


def _rows(x: np.ndarray) -> np.ndarray:
    """x as [positions, -1] (a vmapped call sees one position: one row)."""
    return x.reshape(x.shape[0], -1) if x.ndim >= 2 else x.reshape(-1, 1)


def _report(where: str, logits: Any, value: Any) -> None:
    """Host side of the debug check: raise NonFiniteEvaluation naming what was not finite."""
    bad = []
    for name, x, test in (("NaN policy logits", logits, np.isnan),
                          ("a NaN or infinite value", value, lambda a: ~np.isfinite(a))):
        leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(x)]
        for leaf in leaves:
            if not np.issubdtype(leaf.dtype, np.floating):
                continue
            rows = _rows(leaf)
            hit = test(rows).any(-1)
            if hit.any():
                bad.append(f"{name} at {int(hit.sum())} of {len(hit)} positions (the first: "
                           f"position {int(np.flatnonzero(hit)[0])})")
                break
    if bad:
        raise NonFiniteEvaluation(f"{MARK}the evaluator returned {' and '.join(bad)} in the "
                                  f"{where} search ({ENV_VAR}=1)")


def checked_apply(apply_fn: Callable, where: str) -> Callable:
    """`apply_fn` whose every call is checked on the host for NaN logits and non-finite
    values (the debug switch)."""

    @functools.wraps(apply_fn)
    def apply(variables: Any, observation: Any, *args: Any, **kwargs: Any):
        out = apply_fn(variables, observation, *args, **kwargs)
        if isinstance(out, (tuple, list)) and len(out) == 2:
            jax.debug.callback(functools.partial(_report, where), out[0], out[1])
        return out

    return apply


def with_checked_outputs(evaluator: Any, where: str) -> Any:
    """The evaluator with its apply_fn checked (`checked_apply`); other evaluators as given."""
    if not (dataclasses.is_dataclass(evaluator) and hasattr(evaluator, "apply_fn")):
        return evaluator
    return dataclasses.replace(evaluator, apply_fn=checked_apply(evaluator.apply_fn, where))


def evaluator_error_line(err: BaseException) -> Optional[str]:
    """The debug check's one line inside a runtime error jax raised around it (the host check
    ran inside a compiled call), or None when `err` is not one."""
    for line in str(err).splitlines():
        at = line.find(MARK)
        if at >= 0:
            return line[at + len(MARK):].strip()
    return None
