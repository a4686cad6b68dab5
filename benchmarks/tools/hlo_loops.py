"""Kernels and loops of a compiled function, read from its compiled HLO text.

    from benchmarks.tools.hlo_loops import loop_profile
    profile = loop_profile(jax.jit(f).lower(*args).compile().as_text())

Feeds docs/benchmarks.md, "Trips and kernels per simulation": a figure of a search's cost that
needs no GPU. Each instruction left in a compiled computation is one kernel launch on a GPU (a
fusion, a gather or scatter XLA did not fuse, a sort, a copy, a matrix product), except the
bookkeeping ops that launch nothing (`NO_KERNEL`). A `while` is a loop: on a GPU a loop without
a known trip count copies its predicate to the host and waits for it on every trip.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple, Optional

# ops that launch no kernel: tuple plumbing, constants, aliasing views, and control flow (whose
# bodies are counted where they are called)
NO_KERNEL = frozenset({
    "parameter", "constant", "get-tuple-element", "tuple", "bitcast", "call", "while",
    "conditional", "after-all", "partition-id", "replica-id", "opt-barrier",
    "add-dependency", "domain"})

_HEADER = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) \(.*\{$")
_INSTR = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = (.*)$")
_OPCODE = re.compile(r"(?<![\w.\-%])([a-z][a-z0-9\-]*)\(")


class Loop(NamedTuple):
    """One `while` of a compiled module."""

    name: str
    kernels: int  # kernels of one trip: its condition and body (nested loops not included)
    trip_count: Optional[int]  # XLA's known trip count; None: the data decide (a host round trip)
    nested: tuple  # the loops its body runs (Loop each)
    body: str = ""  # the names of its body and condition computations
    condition: str = ""

    @property
    def total_kernels(self) -> int:
        """Kernels of one trip counting each nested loop's body once."""
        return self.kernels + sum(n.total_kernels for n in self.nested)


def _computations(text: str) -> dict[str, list[str]]:
    comps, name, lines = {}, None, []
    for line in text.splitlines():
        if name is None:
            m = _HEADER.match(line)
            if m:
                name, lines = m.group(1), []
            continue
        if line.strip() == "}":
            comps[name] = lines
            name = None
        else:
            lines.append(line)
    return comps


def _opcode(line: str) -> Optional[str]:
    m = _INSTR.match(line)
    if not m:
        return None
    rhs = m.group(2)
    # skip the shape: a tuple shape "(s32[], f32[4]{0})" starts with "(", an array shape is one
    # token; the opcode is the first word followed by "(" after it
    if rhs.startswith("("):
        depth = 0
        for i, ch in enumerate(rhs):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                rhs = rhs[i + 1:]
                break
    else:
        rhs = rhs.split(" ", 1)[1] if " " in rhs else ""
    m = _OPCODE.search(rhs)
    return m.group(1) if m else None


def _attr(line: str, key: str) -> list[str]:
    """Computation names after `key=` (one name, or a `{%a, %b}` list)."""
    m = re.search(rf"\b{key}=(\{{[^}}]*\}}|%?[\w.\-]+)", line)
    if not m:
        return []
    return [x.strip().lstrip("%") for x in m.group(1).strip("{}").split(",") if x.strip()]


def _trip_count(line: str) -> Optional[int]:
    m = re.search(r"backend_config=(\{.*\})\s*$", line)
    if not m:
        return None
    try:
        n = json.loads(m.group(1)).get("known_trip_count", {}).get("n")
    except json.JSONDecodeError:
        return None
    return None if n is None else int(n)


def _count(comps: dict, name: str) -> tuple[int, list[Loop]]:
    """(kernels of computation `name` outside loops, the loops it runs), through calls and
    conditionals (the largest branch)."""
    kernels, loops = 0, []
    for line in comps.get(name, []):
        op = _opcode(line)
        if op is None:
            continue
        if op == "while":
            (body,), (cond,) = _attr(line, "body"), _attr(line, "condition")
            kb, lb = _count(comps, body)
            kc, lc = _count(comps, cond)
            loops.append(Loop(_INSTR.match(line).group(1), kb + kc, _trip_count(line),
                              tuple(lb + lc), body, cond))
        elif op == "call":
            k, lp = _count(comps, _attr(line, "to_apply")[0])
            kernels, loops = kernels + k, loops + lp
        elif op == "conditional":
            branches = [_count(comps, b) for b in (_attr(line, "branch_computations")
                                                   or _attr(line, "true_computation")
                                                   + _attr(line, "false_computation"))]
            if branches:
                k, lp = max(branches, key=lambda x: x[0] + sum(n.total_kernels for n in x[1]))
                kernels, loops = kernels + k, loops + lp
        elif op not in NO_KERNEL:
            kernels += 1
    return kernels, loops


def _expand(loop: Loop) -> tuple[int, list[int]]:
    """(kernels of one trip of `loop`, with the loops of known trip count it runs counted
    trip_count times over; the per-trip kernels of the loops inside it whose trips the data
    decide, each expanded the same way)."""
    kernels, data = loop.kernels, []
    for n in loop.nested:
        k, d = _expand(n)
        if n.trip_count is None:
            data += [k] + d
        else:
            kernels, data = kernels + n.trip_count * k, data + d
    return kernels, data


def _main_loop(comps: dict, hlo_text: str) -> tuple[int, Optional[Loop]]:
    """(kernels outside every loop, the loop with the most kernels or None)."""
    entry = next((m.group(1) for m in (_HEADER.match(line) for line in hlo_text.splitlines()
                                       if line.startswith("ENTRY ")) if m), None)
    if entry is None:
        raise ValueError("no ENTRY computation in the HLO text")
    outside, loops = _count(comps, entry)
    every = []

    def walk(ls):
        for lp in ls:
            every.append(lp)
            walk(lp.nested)

    walk(loops)
    return outside, (max(every, key=lambda lp: lp.total_kernels) if every else None)


def _numbered(lines: list[str], title: str) -> dict[int, str]:
    """The `N text` lines of the HLO text's table `title` (FileNames, StackFrames, ...)."""
    if title not in lines:
        return {}
    out = {}
    for line in lines[lines.index(title) + 1:]:
        m = re.match(r"^(\d+) (.*)$", line)
        if not m:
            break
        out[int(m.group(1))] = m.group(2)
    return out


def kernels_by_source(hlo_text: str) -> dict[str, int]:
    """The kernels of one trip of the main loop (`loop_profile`'s loop: its body and condition,
    its nested loops not included), counted by the innermost function of the source that made each:
    `file:function` for the first frame of its stack whose path holds one of the library's
    package folders (`turbozero/`, `envs/`, `equity/`), else "?" (XLA's own, or no stack
    recorded). Where a search's loop body spends its kernels, without a GPU: docs/benchmarks.md,
    "Per-node statistics packed in one table"."""
    lines = hlo_text.splitlines()
    files = {k: v.strip('"') for k, v in _numbered(lines, "FileNames").items()}
    funcs = {k: v.strip('"') for k, v in _numbered(lines, "FunctionNames").items()}
    locs = {}
    for k, v in _numbered(lines, "FileLocations").items():
        d = dict(re.findall(r"(\w+)=(\d+)", v))
        locs[k] = (int(d["file_name_id"]), int(d["function_name_id"]))
    frames = {}
    for k, v in _numbered(lines, "StackFrames").items():
        d = dict(re.findall(r"(\w+)=(\d+)", v))
        frames[k] = (int(d["file_location_id"]), int(d.get("parent_frame_id", 0)))
    packages = ("/turbozero/", "/envs/", "/equity/")

    def source(frame: int) -> str:
        seen = set()
        while frame in frames and frame not in seen:
            seen.add(frame)
            loc, parent = frames[frame]
            f, fn = locs.get(loc, (0, 0))
            path = files.get(f, "")
            if "site-packages" not in path:
                for pkg in packages:
                    if pkg in path:
                        return f"{pkg.strip('/')}/{path.split(pkg, 1)[1]}:{funcs.get(fn, '?')}"
            frame = parent
        return "?"

    comps = _computations(hlo_text)
    _, main = _main_loop(comps, hlo_text)
    counts: dict[str, int] = {}
    for line in (comps.get(main.body, []) + comps.get(main.condition, [])) if main else []:
        op = _opcode(line)
        if op is None or op in NO_KERNEL:
            continue
        m = re.search(r"stack_frame_id=(\d+)", line)
        key = source(int(m.group(1))) if m else "?"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def loop_profile(hlo_text: str) -> dict:
    """The main loop of a compiled function (the `while` with the most kernels, nested loops
    counted once) and what one trip of it launches:

    `loop_kernels`: kernels of one trip, loops of known trip count inside it counted as many
    times as they run; `data_loops`: the kernels per trip of each loop inside it whose trips
    the data decide (each of those trips is a host round trip on a GPU), expanded the same way;
    `trip_count`: the main loop's own known trip count; `outside_kernels`: kernels of the entry
    computation outside every loop. A search's kernels per simulation are then about
    `loop_kernels + trips * mean(data_loops)`."""
    comps = _computations(hlo_text)
    outside, main = _main_loop(comps, hlo_text)
    if main is None:
        return {"loop_kernels": 0, "data_loops": [], "trip_count": None,
                "outside_kernels": outside}
    kernels, data = _expand(main)
    return {"loop_kernels": kernels, "data_loops": data, "trip_count": main.trip_count,
            "outside_kernels": outside}
