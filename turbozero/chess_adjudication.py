"""Where `MaterialAdjudication` and `MaterialScore` lived before the chess modules moved to
`turbozero.games.chess.adjudication` (issue 35): run directories written before name them
here (`"turbozero.chess_adjudication:MaterialScore"`), so this module keeps the names for them.
New code imports from `turbozero.games.chess.adjudication`."""

from turbozero.games.chess.adjudication import MaterialAdjudication, MaterialScore

__all__ = ["MaterialAdjudication", "MaterialScore"]
