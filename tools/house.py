#!/usr/bin/env python3
"""The house's figures, checked: loose files at src/'s top level, function
bodies over 150 lines, SQL statements inline in Rust (outside #[cfg(test)]),
and `pub` lines. Exit 1 when a limit is broken; print what breaks it.

    tools/house.py            # from the repository root; -v lists every inline statement
"""
import pathlib
import re
import sys

src = pathlib.Path(__file__).resolve().parent.parent / "src"
MAX_LOOSE, MAX_FN, MAX_SQL = 12, 150, 25
SQL = re.compile(
    r"\s*(SELECT|CREATE|INSERT|DROP|WITH|ALTER|DELETE|UPDATE|COPY|PRAGMA|SET|ATTACH|DETACH|BEGIN|COMMIT|"
    r"ROLLBACK|DESCRIBE|SHOW|SUMMARIZE|TRUNCATE|EXPLAIN|INSTALL|LOAD|CHECKPOINT|ANALYZE|VACUUM|CALL|"
    r"REFRESH|CACHE|USE)\b"
)


def tokens(text):
    """(kind, start, end) of each comment, string literal and brace, in order."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            yield "comment", i, j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2) + 2
            yield "comment", i, j
            i = j
        elif (m := re.match(r'b?r(#*)"', text[i:])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = '"' + m.group(1)
            j = text.find(close, i + m.end()) + len(close)
            yield "string", i + m.end(), j - len(close)
            i = j
        elif c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            yield "string", i + 1, j
            i = j + 1
        elif c == "'" and (m := re.match(r"'(\\.[^']*|[^\\'])'", text[i:])):
            i += m.end()
        elif c in "{}":
            yield c, i, i + 1
            i += 1
        else:
            i += 1


def test_spans(text, toks):
    """Byte ranges of #[cfg(test)] items."""
    spans = []
    for m in re.finditer(r"#\[cfg\(test\)\]", text):
        depth, start = 0, None
        for kind, a, _ in toks:
            if a < m.end() or kind not in "{}":
                continue
            if kind == "{":
                depth += 1
                start = a if start is None else start
            else:
                depth -= 1
                if depth == 0:
                    spans.append((m.start(), a))
                    break
    return spans


def main():
    verbose = "-v" in sys.argv
    loose = sorted(p.name for p in src.glob("*.rs"))
    long_fns, inline, pub = [], [], 0
    for p in sorted(src.rglob("*.rs")):
        text = p.read_text()
        rel = p.relative_to(src.parent)
        toks = list(tokens(text))
        tests = test_spans(text, toks)
        in_test = lambda pos: any(a <= pos <= b for a, b in tests)
        pub += sum(1 for line in text.splitlines() if re.match(r"\s*pub(\s|\(crate\)\s)", line) and "pub(crate)" not in line)
        line_of = lambda pos: text.count("\n", 0, pos) + 1
        for kind, a, b in toks:
            if kind == "string" and SQL.match(text[a:b]) and not in_test(a):
                inline.append(f"{rel}:{line_of(a)}: {text[a:b].strip().splitlines()[0][:70]}")
        # Function bodies: from the `fn` line to its closing brace.
        for m in re.finditer(r"(?m)^[ \t]*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+|async\s+|unsafe\s+)*fn\s+(\w+)", text):
            if any(k == "comment" and a <= m.start() < b for k, a, b in toks):
                continue
            depth, end = 0, None
            for kind, a, _ in toks:
                if a < m.end() or kind not in "{}":
                    continue
                if kind == "{":
                    depth += 1
                else:
                    depth -= 1
                    if depth == 0:
                        end = a
                        break
            if end is None:
                continue
            body = text[m.end() : end]
            if ";" in body.split("{", 1)[0] and "{" in body and body.index(";") < body.index("{"):
                continue  # a declaration without a body (trait method)
            lines = line_of(end) - line_of(m.start()) + 1
            if lines > MAX_FN:
                long_fns.append((lines, f"{rel}:{line_of(m.start())} {m.group(1)}"))
    broken = False
    print(f"loose .rs files at src/: {len(loose)} (at most {MAX_LOOSE}): {' '.join(loose)}")
    broken |= len(loose) > MAX_LOOSE
    print(f"function bodies over {MAX_FN} lines: {len(long_fns)}")
    for lines, where in sorted(long_fns, reverse=True):
        print(f"  {lines:5} {where}")
    broken |= bool(long_fns)
    files = sorted({i.split(":")[0] for i in inline})
    print(f"inline SQL statements: {len(inline)} (at most {MAX_SQL}) in {len(files)} files")
    for f in files:
        print(f"  {sum(1 for i in inline if i.startswith(f + ':')):4} {f}")
    if verbose:
        print("\n".join("    " + i for i in inline))
    broken |= len(inline) > MAX_SQL
    print(f"pub lines (not pub(crate)): {pub}")
    sys.exit(1 if broken else 0)


main()
