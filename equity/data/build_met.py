"""Regenerate `kazaross_xg2.json` from the Kazaross-XG2 table that ships with gnubg.

    /root/venv/bin/python -m equity.data.build_met [path/to/Kazaross-XG2.xml]

The numbers are copied verbatim (as decimal strings parsed to floats) from gnubg's
`data/met/Kazaross-XG2.xml` (gnubg 1.1.0a16 wheel); nothing is recomputed. Only the library
reads the JSON at run time: gnubg is needed here and in the tests, never by `equity` itself.
"""

from __future__ import annotations

import json
import os
import re
import sys
import xml.etree.ElementTree as ET

_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kazaross_xg2.json")


def _default_xml() -> str:
    import gnubg  # only for locating its data folder

    return os.path.join(os.path.dirname(gnubg.__file__), "data", "met", "Kazaross-XG2.xml")


def build(xml_path: str) -> dict:
    """Parse gnubg's MET XML into the JSON layout used by `equity.met`."""
    root = ET.parse(xml_path).getroot()
    info = root.find("info")
    length = int(info.findtext("length"))
    pre = [[float(m.text) for m in row.findall("me")]
           for row in root.find("pre-crawford-table").findall("row")]
    post_tables = root.findall("post-crawford-table")
    if len(post_tables) != 1 or post_tables[0].get("player") != "both":
        raise ValueError(f"expected one post-Crawford table for both players in {xml_path}")
    post = [float(m.text) for m in post_tables[0].find("row").findall("me")]
    if len(pre) != length or any(len(r) != length for r in pre) or len(post) != length:
        raise ValueError(f"table shapes do not match length {length} in {xml_path}")
    return {
        "name": info.findtext("name"),
        "description": info.findtext("description"),
        "source": "gnubg 1.1.0a16 wheel, data/met/Kazaross-XG2.xml (Copyright (C) 2011 Neil "
                  "Kazaross; transcribed for GNUbg by Michael Petch); values copied verbatim",
        "length": length,
        "layout": {
            "pre_crawford": "pre_crawford[i][j]: match winning chance of a player i+1 points "
                            "away against an opponent j+1 away; where one of them is 1 away "
                            "this is the Crawford game",
            "post_crawford": "post_crawford[j]: match winning chance of the trailer, j+1 away, "
                             "against a leader 1 away in a post-Crawford game",
        },
        "pre_crawford": pre,
        "post_crawford": post,
    }


def main(argv: list[str]) -> None:
    xml_path = argv[1] if len(argv) > 1 else _default_xml()
    table = build(xml_path)
    # One table row per line keeps the file readable and its diffs small.
    text = json.dumps(table, indent=1)
    text = re.sub(r"\[\s+([-0-9.e,\s]+?)\s+\]",
                  lambda m: "[" + ", ".join(m.group(1).split()).replace(",,", ",") + "]", text)
    json.loads(text)  # still valid JSON
    with open(_OUT, "w") as f:
        f.write(text + "\n")
    print(f"wrote {_OUT}: {table['name']}, length {table['length']}")


if __name__ == "__main__":
    main(sys.argv)
