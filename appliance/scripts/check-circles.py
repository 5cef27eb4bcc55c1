#!/usr/bin/env python3
"""Fails when the Rust code has a circle: crates that depend on each other (through any
kind of dependency, dev-dependencies included), modules of one crate that import each
other, or folders of one crate that import each other; and when a crate that declares
the order of its rooms has an import against that order.

Crates come from `cargo metadata`. Modules are found by following `mod NAME;` from each
target's root file (lib.rs, main.rs, each integration test and bench root); a module's
imports are the paths it names with `crate::`, `super::`, `self::` or a child module's
name (`use queue::FrameQueue`, `queue::WhenFull`), resolved through `pub use`
re-exports to the module that defines the item, so `use crate::Error` counts as an
import of `error.rs`, not of `lib.rs`. Comments, doc comments, string literals and
`#[cfg(test)] mod tests { ... }` blocks are ignored (a test module may use its parent).

Folders: inside each module that has children (a crate root, a `mod.rs` or `name.rs`
beside a `name/` folder), every child is a room holding itself and all its
descendants; room A imports room B when any module under A imports any module under
B. A circle of rooms that the file level cannot see (one passing through a folder) is
reported like a circle of modules.

Layers: a package may declare the order of the rooms of a folder, top to bottom, once,
in its Cargo.toml:

    [package.metadata.layers]
    src = ["main", "http api", "control", ...]

Each string is one layer (rooms separated by spaces; a layer may import itself and
every layer below it). Every room of that folder must be named, and every name must be
a room or a target's root file there (`main`, `lib`); an import from a room to a room
of a higher layer is reported with its file and line.

Usage: check-circles.py [--workspace DIR] [--self-test]
Prints every circle (each as a ring of modules, folders or crates, with the file and
line of one import per arrow) and every import against a declared order, and exits 1
when there is any, 0 otherwise.
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
        # paths in code: crate::a::b, super::x, self::y, child::z (`use` items were read
        # above: a grouped `use super::super::{a, b}` is not an import of the parent)
        heads = ["crate", "super", "self"] + list(m.children)
        pat = r"(?<![:\w])((?:" + "|".join(map(re.escape, heads)) + r")(?:::" + IDENT + r")+)"
        code = re.sub(r"^[ \t]*(pub(?:\([^)]*\))?\s+)?use\s+[^;]+;",
                      lambda u: "\n" * u.group(0).count("\n"), text, flags=re.M)
        for rm in re.finditer(pat, code):
            line = code.count("\n", 0, rm.start()) + 1
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


def room_edges(modules, edges, parent):
    """The rooms of folder `parent` (its children) and the imports between them: room ->
    room -> (file, line) of one import."""
    n = len(parent)
    rooms = {k[n] for k in modules if len(k) > n and k[:n] == parent}
    out = {}
    for a, targets in edges.items():
        if len(a) <= n or a[:n] != parent:
            continue
        for b, where in targets.items():
            if len(b) <= n or b[:n] != parent or a[n] == b[n]:
                continue
            out.setdefault(a[n], {}).setdefault(b[n], where)
    return rooms, out


def folder_circles(modules, edges):
    """Circles of rooms in every folder that pass through a folder (a circle of single
    files is the file level's): (parent, component, room edges)."""
    found = []
    for parent in sorted(modules):
        if not modules[parent].children:
            continue
        rooms, redges = room_edges(modules, edges, parent)
        for comp in cycles(rooms, redges):
            if any(modules[parent + (r,)].children for r in comp):
                found.append((parent, comp, redges))
    return found


def layer_problems(modules, edges, parent, layers, roots):
    """What breaks the declared `layers` of folder `parent`: undeclared rooms, declared
    names that are nothing there, and imports from a room to a higher layer."""
    level = {}
    for i, layer in enumerate(layers):
        for name in layer.split():
            level[name] = i
    rooms, redges = room_edges(modules, edges, parent)
    out = []
    for r in sorted(rooms - set(level)):
        out.append("room %s is not in the declared order" % r)
    for name in sorted(set(level) - rooms - set(roots)):
        out.append("declared room %s is not a room here" % name)
    for a in sorted(redges):
        for b, where in sorted(redges[a].items()):
            if a in level and b in level and level[b] < level[a]:
                out.append("%s imports %s, a higher layer   (%s:%d)" % (a, b, where[0], where[1]))
    return out


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
        declared = ((p.get("metadata") or {}).get("layers") or {})
        pkg_dir = os.path.dirname(p["manifest_path"])
        checked = set()
        for root in roots:
            modules = load_crate(root)
            edges = module_edges(modules)
            rel = os.path.relpath(root, workspace)
            name = lambda path: "::".join(("crate",) + path)
            for comp in cycles(modules, edges):
                found.append("modules of %s (%s): %s" % (p["name"], rel, ", ".join(map(name, comp))))
                found += [l.replace(workspace + "/", "") for l in describe(comp, edges, name)]
            for parent, comp, redges in folder_circles(modules, edges):
                folder = os.path.relpath(modules[parent].dir, workspace)
                found.append("folders of %s (%s/): %s" % (p["name"], folder, ", ".join(comp)))
                found += [l.replace(workspace + "/", "")
                          for l in describe(comp, redges, lambda r: r)]
            for folder, layers in sorted(declared.items()):
                for parent, m in modules.items():
                    if os.path.normpath(m.dir) != os.path.normpath(os.path.join(pkg_dir, folder)):
                        continue
                    if not m.children and parent == ():
                        continue  # a target root with no rooms (main.rs)
                    checked.add(folder)
                    here = os.path.join(pkg_dir, folder)
                    target_roots = {os.path.splitext(os.path.basename(r))[0]
                                    for r in roots if os.path.dirname(r) == here}
                    for problem in layer_problems(modules, edges, parent, layers, target_roots):
                        found.append("layers of %s (%s/): %s" % (
                            p["name"], os.path.relpath(here, workspace),
                            problem.replace(workspace + "/", "")))
        for folder in sorted(set(declared) - checked):
            found.append("layers of %s: no module folder %s to check" % (p["name"], folder))
    return found


def self_test():
    """Tiny crates that must pass or be caught: a two-module circle (and a clean crate
    without it); a circle of two folders whose files form no circle; an import against
    a declared order without any circle."""
    def probe(d, files, layers=None):
        meta = ""
        if layers is not None:
            meta = "[package.metadata.layers]\nsrc = [%s]\n" % ", ".join('"%s"' % l for l in layers)
        os.makedirs(os.path.join(d, "src"), exist_ok=True)
        open(os.path.join(d, "Cargo.toml"), "w").write(
            '[package]\nname = "circle-probe"\nversion = "0.0.0"\nedition = "2021"\n'
            + meta + '[lib]\npath = "src/lib.rs"\n')
        for rel, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            open(os.path.join(d, rel), "w").write(text)
        return check(d)

    ok = True
    with tempfile.TemporaryDirectory() as d:
        files = {
            "src/lib.rs": "//! probe\nmod a;\nmod b;\npub use a::A;\n#[cfg(test)]\nmod tests { use super::*; }\n",
            "src/a.rs": "/// uses crate::b in a comment only\npub struct A;\npub fn f() -> crate::b::B { crate::b::B }\n",
            "src/b.rs": "pub struct B;\nconst S: &str = \"crate::a::A\";\n#[cfg(test)]\nmod tests { use crate::A; }\n",
        }
        clean = probe(d, files)
        files["src/b.rs"] += "pub fn g() -> crate::A { crate::A }\n"
        circled = probe(d, files)
        if clean or not circled or "crate::a, crate::b" not in circled[0]:
            print("self-test: modules FAILED (clean: %r, circled: %r)" % (clean, circled))
            ok = False
    with tempfile.TemporaryDirectory() as d:
        # a/x.rs -> b/y.rs and b/z.rs -> a/w.rs: no two files import each other, but the
        # folders a and b do.
        files = {
            "src/lib.rs": "//! probe\nmod a;\nmod b;\n",
            "src/a/mod.rs": "pub mod w;\npub mod x;\n",
            "src/a/w.rs": "pub struct W;\n",
            "src/a/x.rs": "pub fn f() -> crate::b::y::Y { crate::b::y::Y }\n",
            "src/b/mod.rs": "pub mod y;\npub mod z;\n",
            "src/b/y.rs": "pub struct Y;\n",
            "src/b/z.rs": "pub struct Z;\n",
        }
        clean = probe(d, files, ["a", "b"])
        files["src/b/z.rs"] = "pub fn g() -> crate::a::w::W { crate::a::w::W }\n"
        folders = probe(d, files)
        if clean or not any(f.startswith("folders of circle-probe") and ": a, b" in f for f in folders) \
                or any(f.startswith("modules of") for f in folders):
            print("self-test: folders FAILED (clean: %r, circled: %r)" % (clean, folders))
            ok = False
        files["src/b/z.rs"] = "pub struct Z;\n"
        against = probe(d, files, ["b", "lib", "a"])
        if not any("a imports b, a higher layer" in f for f in against) \
                or any(f.startswith(("folders", "modules")) for f in against):
            print("self-test: layers FAILED (against the order: %r)" % (against,))
            ok = False
        undeclared = probe(d, files, ["a"])
        if not any("room b is not in the declared order" in f for f in undeclared):
            print("self-test: layers FAILED (an undeclared room: %r)" % (undeclared,))
            ok = False
    print("self-test:", "ok" if ok else "FAILED")
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
        print("check-circles: %d circle(s) or import(s) against the declared order among the "
              "Rust crates, their modules and folders:" % sum(
                  1 for f in found if not f.startswith("    ")))
        print("\n".join(found))
        return 1
    print("check-circles: no circle among %s's crates, their modules or their folders, "
          "and no import against a declared order" % os.path.basename(ws))
    return 0


if __name__ == "__main__":
    sys.exit(main())
