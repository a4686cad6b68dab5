"""Writes jobs.json for the oracle driver (src/main.rs) from this repository's engine data.

Run from the repository root: python tests/data/pacosako/oracle/make_jobs.py
The engine's test FENs that keep castling rights with the king off e1/e8 (Fischer-random
castling, not implemented here) are used without those rights, for the engine and for us alike.
"""
import json
import os
import sys

sys.path.insert(0, os.getcwd())
from envs import pacosako as P  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.dirname(HERE)

# FEN strings of the engine's unit tests (lib/src/*.rs, `parse_fen("...")`, commit 5ecb8c1).
ENGINE_TEST_FENS = [
    "1lb1k3/8/1tApS3/2p2p2/1A2P1A1/1p1Ps1P1/2C1T2p/R1B1K2R w 0 AHah - -",
    "1n2k1n1/ppp2ppp/3p2NE/6RB/2P3PA/i6C/P2F4/REBQ3K w 0 AHah - -",
    "2k1r3/ppc2ppp/3i4/3p1b2/PEtPpB1P/3L1NPB/2P1DP2/5K2 w 0 AHah - -",
    "2nr3r/2pU1ppp/1pt1p3/p2p1b2/Pb1P3P/1R2R3/1PPWPPP1/1N2KB2 w 0 AHah - -",
    "5rk1/ppp2pep/8/1B1AH2D/4f1b1/2N3SP/PPP2DP1/5L1K w 0 AHah - -",
    "r2q1b2/p1pk1p2/2np1n1r/3QdSpA/4PAP1/3P1B2/PPP5/R3KB1R w 0 AHah - -",
    "rn1qkbnr/pppp2pp/4E3/4p3/3Pp3/8/PPP2PPP/RNBQKBNR b 0 AHah - -",
    "rn2Srkt/pp3e1p/8/8/1P1AP1bA/4ed2/P1P1F2P/R3K2R b 0 AHah - -",
    "rn2k1nr/pppppppp/4E2q/8/2E5/8/PP1PKPPP/RNBQ1BNR b 0 AHah - -",
    "rnb1ks2/pppp1pp1/3q4/7p/1E1p2C1/3P4/P1P1PP1P/RNBQK1NR b 0 AHah - -",
    "rnbqk2r/pp1p1B1e/1f2c3/3PN3/3w1A2/3P1OA1/PP5P/2KR4 w 0 AHah - -",
    "rnbqkb1r/ppf2p1p/6p1/3D3d/2Bp4/8/PPPP1PPP/RNB1K2R b 0 AHah - -",
    "rnbqkbnr/pppp1p1p/8/5d2/4P3/4c3/PPPP1PPP/RNBQKB2 w 0 AHah - -",
    "rnbqkbnr/pppppppp/5N2/8/8/8/PPPPPPPP/RNBQKB1R w 0 AHah - -",
]

# Positions with castling in play: rights kept, open lines towards the castling squares.
CASTLING_FENS = [
    "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w 0 AHah - -",
    "r3k2r/ppp2ppp/8/8/8/8/PPP2PPP/R3K2R w 0 AHah - -",
    "r3k2r/ppp2ppp/8/8/8/8/PPP2PPP/R3K2R b 0 AHah - -",
    "r3k2r/p6p/8/8/8/8/P6P/R3K2R w 0 AHah - -",
    "r3k2r/1b4b1/2n2n2/8/8/2N2N2/1B4B1/R3K2R w 0 AHah - -",
    "rn2k2r/pppq1ppp/3b1n2/4p3/4P3/3B1N2/PPPQ1PPP/RN2K2R w 0 AHah - -",
    "r3k2r/pp1q1ppp/2n1bn2/2b1p3/2B1P3/2N1BN2/PP1Q1PPP/R3K2R w 0 AHah - -",
    "r3k2r/8/8/3q4/3Q4/8/8/R3K2R w 0 AHah - -",
]


def king_squares(fen: str) -> dict:
    """Squares of the two kings (single or in a union) from the FEN's board field."""
    letters = {"k": "b", "K": "w"}
    found, rank = {}, 8
    for row in fen.split()[0].split("/"):
        f = 0
        for ch in row:
            if ch.isdigit():
                f += int(ch)
                continue
            if ch in letters:
                found[letters[ch]] = "abcdefgh"[f] + str(rank)
            f += 1
        rank -= 1
    return found


def without_fischer_rights(fen: str) -> str:
    """Drops the castling rights of a side whose king is not on e1/e8 (kept by both sides)."""
    parts = fen.split()
    kings = king_squares(fen)
    rights = parts[3]
    if kings.get("w") != "e1":
        rights = rights.replace("A", "").replace("H", "")
    if kings.get("b") != "e8":
        rights = rights.replace("a", "").replace("h", "")
    parts[3] = rights or "-"
    return " ".join(parts)


def usable(fen: str) -> bool:
    """False (and a note on stderr) for a FEN the library cannot start a game from."""
    try:
        state = P.from_notation(fen)
    except ValueError as e:
        print(f"skipped {fen}: {e}", file=sys.stderr)
        return False
    if bool(state.terminated):
        # a king already in a union: a finished game here (docs/pacosako.md), the engine's
        # FEN parser keeps it running
        print(f"skipped {fen}: a king is in a union", file=sys.stderr)
        return False
    return True


def main() -> None:
    jobs = []
    for game in json.load(open(os.path.join(DATA, "replays.json")))["games"]:
        jobs.append({"kind": "replay", "id": str(game["id"]), "fen": None,
                     "actions": game["actions"]})
    tests = [f for f in map(without_fischer_rights, ENGINE_TEST_FENS) if usable(f)]
    book = [e["fen"] for e in json.load(open(os.path.join(DATA, "opening_book_sample.json")))["entries"]]
    book = [f for f in book if usable(f)]
    for i, fen in enumerate(tests):
        jobs.append({"kind": "test", "id": f"test{i}", "fen": fen, "games": 4, "seed": 100 + i,
                     "max_actions": 200})
    for i, fen in enumerate(book):
        jobs.append({"kind": "book", "id": f"book{i}", "fen": fen, "games": 1, "seed": 1000 + i,
                     "max_actions": 200})
    jobs.append({"kind": "random", "id": "start", "fen": None, "games": 300, "seed": 7,
                 "max_actions": 300})
    for i, fen in enumerate(CASTLING_FENS):
        assert usable(fen), fen
        jobs.append({"kind": "castling", "id": f"castle{i}", "fen": fen, "games": 16,
                     "seed": 2000 + i, "max_actions": 200})
    json.dump(jobs, open(os.path.join(HERE, "jobs.json"), "w"), separators=(",", ":"))
    print(f"{len(jobs)} jobs ({len(tests)} engine test FENs, {len(book)} book FENs)", file=sys.stderr)


if __name__ == "__main__":
    main()
