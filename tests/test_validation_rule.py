"""One validation rule for every public constructor (issue 45 item 1): each numeric field of
every search config class and env class is fed NaN, inf, 2.5, "7", True, -1 and 2**40. An
integer field refuses all of them but -1 (which its own range may allow); a real field refuses
NaN, inf, "7" and True (2.5, -1 and 2**40 its range may allow). A refusal is one ValueError
line naming the field; nothing else (a TypeError, an OverflowError, a MemoryError, a silent
truncation) is allowed. Was: MCGSConfig took NaN and 2.5, env constructors truncated 2.7 and
read "100", PyRat built a 16 TiB table."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import typing

import pytest

import envs
from envs import _REGISTRY
from turbozero.networks.mlp import MLPNet
from turbozero.networks.resnet import ResNet
from turbozero.networks.simultaneous import TwoPlayerNet
from turbozero.search import api
from turbozero.search.acting import TemperatureSchedule
from turbozero.search.cpu.selfplay import CPUSelfPlayConfig
from turbozero.search.roots import GumbelRoot, PUCTRoot
from turbozero.search.selection import MctxPUCT, SpecPUCT
from turbozero.training.replay_sampling import OutcomeStratified
from turbozero.training.updates import (SGD, Adam, ClipByGlobalNorm, MaskedWeightDecay,
                                        Optimizer, WarmupCosine)

NAN, INF = float("nan"), float("inf")
ALWAYS_BAD = {"int": (NAN, INF, 2.5, "7", True, 2**40), "real": (NAN, INF, "7", True)}
MAYBE_BAD = {"int": (-1,), "real": (2.5, -1, 2**40)}
# integer fields that JAX never holds, with a range of their own beyond int32
WIDER = {"seed": "CPUSelfPlayConfig.seed seeds the C++ self-play's uint64 generator"}
PARTS = (PUCTRoot, GumbelRoot, SpecPUCT, MctxPUCT, TemperatureSchedule, CPUSelfPlayConfig,
         OutcomeStratified,
         Optimizer, WarmupCosine, ClipByGlobalNorm, MaskedWeightDecay, Adam, SGD)


def _kind(default, annotation) -> typing.Optional[str]:
    """'int', 'real' or None (not a numeric field) from a field's default and annotation."""
    if isinstance(default, bool):
        return None
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "real"
    if default is None and isinstance(annotation, str):  # an env's signature, not resolved
        annotation = {"Optional[int]": typing.Optional[int],
                      "Optional[float]": typing.Optional[float]}.get(annotation)
    args = set(typing.get_args(annotation)) - {type(None)}
    if default is None and args == {int}:
        return "int"
    if default is None and args == {float}:
        return "real"
    return None


def _search_fields():
    classes = {family.config_type for family in api._FAMILIES.values()} | set(PARTS)
    for cls in sorted(classes, key=lambda c: c.__name__):
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            kind = _kind(f.default, hints.get(f.name)) if f.init else None
            if kind:
                yield pytest.param(cls, f.name, kind, id=f"{cls.__name__}.{f.name}")


def _env_fields():
    for game, target in sorted(_REGISTRY.items()):
        if isinstance(target, str):  # "module:Class", imported on use
            module, name = target.split(":")
            cls = getattr(importlib.import_module(module), name)
        else:  # a class registered itself (envs.register)
            cls = target
        for p in inspect.signature(cls.__init__).parameters.values():
            if p.name == "self" or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                continue
            kind = _kind(p.default, p.annotation)
            if kind:
                yield pytest.param(lambda g=game, **kw: envs.make(g, **kw), p.name, kind,
                                   id=f"{game}.{p.name}")


def _check(make, field: str, kind: str, owner: str = "") -> None:
    for bad in ALWAYS_BAD[kind] + MAYBE_BAD[kind]:
        try:
            make(**{field: bad})
        except ValueError as err:
            text = str(err)
            assert "\n" not in text, (field, bad, text)
            assert field in text.replace("(", " ").replace(")", " ").split() or \
                f"{field} " in text or f"{field}=" in text or f"({field})" in text, \
                (field, bad, text)
            continue
        wide = bad == 2**40 and f"{owner}.{field}" in WIDER.get(field, "")
        assert bad in MAYBE_BAD[kind] or wide, f"{field}={bad!r} was accepted"


@pytest.mark.parametrize("cls, field, kind", list(_search_fields()))
def test_every_search_config_field_follows_the_rule(cls, field, kind):
    _check(cls, field, kind, cls.__name__)


@pytest.mark.parametrize("make, field, kind", list(_env_fields()))
def test_every_env_option_follows_the_rule(make, field, kind):
    _check(make, field, kind)


NETWORKS = ((MLPNet, {"num_actions": 9}), (ResNet, {"num_actions": 9}),
            (TwoPlayerNet, {}))


def _network_fields():
    for cls, base in NETWORKS:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            kind = _kind(f.default if f.name not in base else base[f.name], hints.get(f.name))
            if kind and f.init and f.name not in ("parent", "name"):
                yield pytest.param(lambda c=cls, b=base, **kw: c(**{**b, **kw}), f.name, kind,
                                   id=f"{cls.__name__}.{f.name}")


@pytest.mark.parametrize("make, field, kind", list(_network_fields()))
def test_every_network_size_follows_the_rule(make, field, kind):
    _check(make, field, kind)


@pytest.mark.parametrize("sizes", [(128, -5), 0, "64", (64, 2.5), (64, "8"), (True,),
                                   (64, 2**40)])
def test_hidden_sizes_are_a_tuple_of_widths(sizes):
    """Was: (128, -5) and 0 reached flax, "64" was read as the widths 6 and 4."""
    with pytest.raises(ValueError, match="^MLPNet: hidden_sizes") as err:
        MLPNet(9, hidden_sizes=sizes)
    assert "\n" not in str(err.value)
    from turbozero.games import game_spec
    from turbozero.games.spec import build_network

    with pytest.raises(ValueError, match="hidden_sizes"):
        build_network(game_spec("backgammon"), envs.make("backgammon"), {"hidden_sizes": sizes})


def test_the_walk_covers_what_the_issue_named():
    """The walk is not empty by accident: it reaches the classes the issue found at fault."""
    search = {p.id for p in _search_fields()}
    env = {p.id for p in _env_fields()}
    assert {"MCGSConfig.num_simulations", "MCGSConfig.c_puct", "TreeSearchConfig.num_simulations",
            "AfterstatePlayerConfig.max_afterstates", "MctxConfig.num_simulations"} <= search
    assert {"chess.max_episode_steps", "gomoku.size", "pyrat.max_episode_steps",
            "pyrat.wall_density", "pacosako.draw_after_repetitions"} <= env
