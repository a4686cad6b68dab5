"""turbozero: JAX-native game environments, search and training for AlphaZero-style learning."""

__version__ = "0.1.0"
