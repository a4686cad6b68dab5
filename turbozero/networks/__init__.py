"""Flax networks: trunks (MLP, residual) with policy and value heads."""

from turbozero.networks.heads import ValueHead
from turbozero.networks.mlp import MLPNet
from turbozero.networks.resnet import ResidualBlock, ResNet
from turbozero.networks.simultaneous import TwoPlayerNet
from turbozero.networks.value_formats import (
    FourWayValue,
    MoverRelativeValues,
    ScalarValue,
    SeatValues,
    ValueFormat,
    WDLValue,
)

__all__ = ["MLPNet", "ResNet", "ResidualBlock", "TwoPlayerNet", "ValueHead", "ValueFormat",
           "ScalarValue", "WDLValue", "FourWayValue", "SeatValues", "MoverRelativeValues"]
