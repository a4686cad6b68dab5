"""Gomoku internals: line detection and chain counts (`lines`), placements (`ranking`), the local
view and observation (`view`), text and SVG pictures (`render`)."""
