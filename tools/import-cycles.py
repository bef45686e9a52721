#!/usr/bin/env python3
"""Import circles between kanon's modules: exit 1 and print each circle.

A module is a file of src/ (src/search/topdown.rs is search::topdown); it
depends on another when it names it in a `crate::…` or `super::…` path
(use lines or inline). A folder's mod.rs and its own files count as one
module for this check (a parent that re-exports its children is no circle).

    tools/import-cycles.py            # from the repository root

Layers: every top-level module has a layer (LAYERS, lowest first); an import
may go down or across its own layer, never up. A module missing from LAYERS
is an error, so a new folder is placed on purpose.
"""
import pathlib
import re
import sys

src = pathlib.Path(__file__).resolve().parent.parent / "src"


def module_of(path):
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "mod":
        parts.pop()
    if parts in (["lib"], ["main"]):
        return None
    return tuple(parts)


modules = {m: p for p in src.rglob("*.rs") if (m := module_of(p)) is not None}


def resolve(path):
    """The longest module prefix of a path's segments."""
    for n in range(len(path), 0, -1):
        if tuple(path[:n]) in modules:
            return tuple(path[:n])
    return None


def unit(m):
    """A module with children and its children are one unit."""
    return m[:1] if len(m) > 1 and (src / m[0]).is_dir() else m


def paths(text):
    """Every crate:: path, with braces expanded one level (use a::{b, c::d})."""
    text = re.sub(r"//[^\n]*", "", text)
    for m in re.finditer(r"\b(crate|super)((?:::\w+)+)(::\{([^{}]*)\})?", text):
        head = [m.group(1)] + m.group(2).split("::")[1:]
        if m.group(4) is None:
            yield head
        else:
            for item in m.group(4).split(","):
                item = item.strip().split(" as ")[0]
                if item and item != "self":
                    yield head + item.split("::")
                else:
                    yield head


edges = {}
for m, p in modules.items():
    for path in paths(p.read_text()):
        if path[0] == "super":
            base = list(m[:-1])
            rest = path[1:]
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
            full = base + rest
        else:
            full = path[1:]
        target = resolve(full)
        if target and unit(target) != unit(m):
            edges.setdefault(unit(m), set()).add(unit(target))

# Lowest first. A module imports only from its own layer or those below.
LAYERS = [
    ["error", "sql", "progress", "lattice", "options", "pseudonym"],
    ["job"],
    ["engine"],
    ["data"],
    ["measure"],
    ["evaluator"],
    ["load"],
    ["search"],
    ["report", "release", "html"],
    ["anonymize", "audit", "pareto", "profile", "scale"],
    ["cmd", "cli"],
]
layer = {name: i for i, names in enumerate(LAYERS) for name in names}
upward = []
for v in sorted({unit(m) for m in modules}):
    if v[0] not in layer:
        upward.append(f"module {v[0]} has no layer in tools/import-cycles.py")
        continue
    for w in sorted(edges.get(v, ())):
        if layer.get(w[0], -1) > layer[v[0]]:
            upward.append(f"import up a layer: {'::'.join(v)} -> {'::'.join(w)}")

# Tarjan's strongly connected components.
index, low, stack, on, circles = {}, {}, [], set(), []


def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in sorted(edges.get(v, ())):
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        part = []
        while True:
            w = stack.pop()
            on.discard(w)
            part.append(w)
            if w == v:
                break
        if len(part) > 1:
            circles.append(sorted(part))


sys.setrecursionlimit(10000)
for v in sorted({unit(m) for m in modules}):
    if v not in index:
        visit(v)
for c in circles:
    print("import circle: " + " <-> ".join("::".join(m) for m in c))
for u in upward:
    print(u)
units = {unit(m) for m in modules}
print(f"{len(units)} modules, {sum(len(e) for e in edges.values())} dependencies, {len(circles)} circles, {len(upward)} imports up a layer")
sys.exit(1 if circles or upward else 0)
