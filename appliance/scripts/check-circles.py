#!/usr/bin/env python3
"""Fails when the Rust code has a circle: crates that depend on each other (through any
kind of dependency, dev-dependencies included), or modules of one crate that import each
other.

Crates come from `cargo metadata`. Modules are found by following `mod NAME;` from each
target's root file (lib.rs, main.rs, each integration test and bench root); a module's
imports are the paths it names with `crate::`, `super::`, `self::` or a child module's
name (`use queue::FrameQueue`, `queue::WhenFull`), resolved through `pub use`
re-exports to the module that defines the item, so `use crate::Error` counts as an
import of `error.rs`, not of `lib.rs`. Comments, doc comments, string literals and
`#[cfg(test)] mod tests { ... }` blocks are ignored (a test module may use its parent).

Usage: check-circles.py [--workspace DIR] [--self-test]
Prints every circle (each as a ring of modules or crates, with the file and line of one
import per arrow) and exits 1 when there is any, 0 otherwise.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def strip_code(text):
    """Blanks comments and string/char literals, keeping line numbers."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
            continue
        if text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * text.count("\n", i, j))
            i = j
            continue
        m = re.match(r'b?r(#*)"', text[i:])
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = text.find('"' + m.group(1), i + len(m.group(0)))
            end = n if end < 0 else end + 1 + len(m.group(1))
            out.append('""' + "\n" * text.count("\n", i, end))
            i = end
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""' + "\n" * text.count("\n", i, j))
            i = j + 1
            continue
        if c == "'":
            # a char literal ('a', '\n', '\u{..}'), not a lifetime ('a)
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            if m:
                out.append("' '")
                i += len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out)


def drop_test_modules(text):
    """Removes `#[cfg(test)] mod NAME { ... }` blocks (keeping line numbers)."""
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+" + IDENT + r"\s*\{", text)
        if not m:
            return text
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        text = text[: m.start()] + "\n" * text.count("\n", m.start(), j) + text[j:]


def expand_use_tree(tree):
    """`a::{b, c::{d, e}}` -> ["a::b", "a::c::d", "a::c::e"]."""
    tree = re.sub(r"\s+", " ", tree)
    tree = re.sub(r"\s*(::|\{|\}|,)\s*", r"\1", tree).strip()
    i = tree.find("{")
    if i < 0:
        return [tree]
    prefix, inner = tree[:i], tree[i + 1 : tree.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    parts.append(cur)
    out = []
    for p in filter(None, parts):
        for e in expand_use_tree(p):
            out.append(prefix + e if e != "self" else prefix.rstrip(":"))
    return out


class Module:
    def __init__(self, path, file, is_dir_owner):
        self.path = path  # tuple of names below the crate root
        self.file = file
        self.dir = os.path.dirname(file) if is_dir_owner else os.path.join(
            os.path.dirname(file), os.path.splitext(os.path.basename(file))[0])
        self.children = {}
        self.uses = []  # (line, full path tuple relative to crate root, is_reexport)
        self.refs = []  # (line, path tuple as written)
        self.reexports = {}  # name -> target path tuple


def resolve_rel(module, parts):
    """A path as written in `module` -> absolute tuple, or None when external."""
    if not parts:
        return None
    base = list(module.path)
    head = parts[0]
    if head == "crate":
        return tuple(parts[1:])
    if head in ("super", "self"):
        i = 0
        while i < len(parts) and parts[i] in ("super", "self"):
            if parts[i] == "super":
                if not base:
                    return None
                base.pop()
            i += 1
        return tuple(base) + tuple(parts[i:])
    if head in module.children:
        return tuple(module.path) + tuple(parts)
    return None


def load_crate(root_file):
    modules = {}

    def visit(path, file, is_dir_owner):
        m = Module(path, file, is_dir_owner)
        modules[path] = m
        text = drop_test_modules(strip_code(open(file, encoding="utf-8").read()))
        m.text = text
        for mm in re.finditer(r"^[ \t]*(?:pub(?:\([^)]*\))?\s+)?mod\s+(" + IDENT + r")\s*;", text, re.M):
            name = mm.group(1)
            cand = [os.path.join(m.dir, name + ".rs"), os.path.join(m.dir, name, "mod.rs")]
            for c in cand:
                if os.path.isfile(c):
                    m.children[name] = path + (name,)
                    visit(path + (name,), c, c.endswith("mod.rs"))
                    break
        return m

    visit((), root_file, True)
    for m in modules.values():
        text = m.text
        for um in re.finditer(r"^[ \t]*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", text, re.M):
            line = text.count("\n", 0, um.start()) + 1
            reexport = bool(um.group(1)) and not um.group(1).strip().startswith("pub(")
            for p in expand_use_tree(um.group(2)):
                alias = None
                if " as " in p:
                    p, alias = p.split(" as ", 1)
                parts = p.split("::")
                absolute = resolve_rel(m, parts)
                if absolute is None:
                    continue
                m.uses.append((line, absolute))
                if reexport and parts[-1] not in ("*",):
                    m.reexports[alias or parts[-1]] = absolute
        # paths in code: crate::a::b, super::x, self::y, child::z
        heads = ["crate", "super", "self"] + list(m.children)
        pat = r"(?<![:\w])((?:" + "|".join(map(re.escape, heads)) + r")(?:::" + IDENT + r")+)"
        for rm in re.finditer(pat, text):
            line = text.count("\n", 0, rm.start()) + 1
            absolute = resolve_rel(m, rm.group(1).split("::"))
            if absolute is not None:
                m.refs.append((line, absolute))
    return modules


def owner(modules, path, depth=0):
    """The module that defines the item at `path` (following re-exports)."""
    path = tuple(p for p in path if p != "*")
    best = ()
    for i in range(len(path), -1, -1):
        if path[:i] in modules:
            best = path[:i]
            break
    rest = path[len(best):]
    if rest and depth < 16:
        target = modules[best].reexports.get(rest[0])
        if target is not None and target != best + (rest[0],):
            return owner(modules, target + rest[1:], depth + 1)
    return best


def module_edges(modules):
    edges = {}
    for m in modules.values():
        for line, path in m.uses + m.refs:
            o = owner(modules, path)
            if o != m.path and o in modules:
                edges.setdefault(m.path, {}).setdefault(o, (m.file, line))
    return edges


def cycles(nodes, edges):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return out


def describe(comp, edges, name):
    lines = []
    members = set(comp)
    for v in comp:
        for w, where in sorted(edges.get(v, {}).items()):
            if w in members:
                lines.append("    %s -> %s   (%s:%d)" % (name(v), name(w), where[0], where[1]))
    return lines


def check(workspace):
    meta = json.loads(subprocess.check_output(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        cwd=workspace))
    members = {p["name"]: p for p in meta["packages"]}
    found = []
    crate_edges = {}
    for p in members.values():
        for d in p["dependencies"]:
            if d["name"] in members:
                crate_edges.setdefault(p["name"], {})[d["name"]] = (p["manifest_path"], 0)
    for comp in cycles(members, crate_edges):
        found.append("crates: " + " <-> ".join(comp))
        found += ["    %s depends on %s" % (a, b) for a in comp for b in crate_edges.get(a, {}) if b in comp]
    for p in sorted(members.values(), key=lambda p: p["name"]):
        roots = sorted({t["src_path"] for t in p["targets"]})
        for root in roots:
            modules = load_crate(root)
            edges = module_edges(modules)
            rel = os.path.relpath(root, workspace)
            for comp in cycles(modules, edges):
                name = lambda path: "::".join(("crate",) + path)
                found.append("modules of %s (%s): %s" % (p["name"], rel, ", ".join(map(name, comp))))
                found += [l.replace(workspace + "/", "") for l in describe(comp, edges, name)]
    return found


def self_test():
    """A tiny crate with a two-module circle must be caught; without it, nothing."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "src"))
        open(os.path.join(d, "Cargo.toml"), "w").write(
            '[package]\nname = "circle-probe"\nversion = "0.0.0"\nedition = "2021"\n[lib]\npath = "src/lib.rs"\n')
        open(os.path.join(d, "src/lib.rs"), "w").write(
            "//! probe\nmod a;\nmod b;\npub use a::A;\n#[cfg(test)]\nmod tests { use super::*; }\n")
        open(os.path.join(d, "src/a.rs"), "w").write(
            "/// uses crate::b in a comment only\npub struct A;\npub fn f() -> crate::b::B { crate::b::B }\n")
        open(os.path.join(d, "src/b.rs"), "w").write(
            "pub struct B;\nconst S: &str = \"crate::a::A\";\n#[cfg(test)]\nmod tests { use crate::A; }\n")
        clean = check(d)
        open(os.path.join(d, "src/b.rs"), "a").write("pub fn g() -> crate::A { crate::A }\n")
        circled = check(d)
    ok = not clean and len(circled) >= 1 and "crate::a, crate::b" in circled[0]
    print("self-test:", "ok" if ok else "FAILED (clean: %r, circled: %r)" % (clean, circled))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workspace", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "../.."))
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test and not self_test():
        return 1
    ws = os.path.abspath(args.workspace)
    found = check(ws)
    if found:
        print("check-circles: %d circle(s) among the Rust crates or their modules:" % sum(
            1 for f in found if not f.startswith("    ")))
        print("\n".join(found))
        return 1
    print("check-circles: no circle among %s's crates or their modules" % os.path.basename(ws))
    return 0


if __name__ == "__main__":
    sys.exit(main())
