"""Backgammon internals: rules (jax), notation (Position IDs, render), gnubg bridge."""
