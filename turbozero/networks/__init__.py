"""Flax networks: trunks (MLP, residual) with policy and value heads."""

from turbozero.networks.heads import VALUE_HEAD_KINDS, ValueHead, value_to_scalar
from turbozero.networks.mlp import MLPNet
from turbozero.networks.resnet import ResidualBlock, ResNet
from turbozero.networks.simultaneous import TwoPlayerNet

__all__ = ["MLPNet", "ResNet", "ResidualBlock", "TwoPlayerNet", "ValueHead", "VALUE_HEAD_KINDS", "value_to_scalar"]
