#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Find circles between the module's source files, from their objects.

Usage: object-cycles.py NM OBJECT...

Each OBJECT is one compiled .c file of the module.  There is an edge
A -> B when an undefined symbol of A.o is defined in B.o (a function
called or a variable or table referenced).  Every strongly connected
component of two or more files is a circle: those files depend on each
other and cannot be understood, tested or replaced one at a time.

Prints each circle with the symbols that make its edges and exits 1 when
there is one, 0 when the files form a layered graph (no circle).
"""
import subprocess
import sys


def symbols(nm, obj):
    """(defined, undefined) global symbol names of one object."""
    out = subprocess.run([nm, "--format=posix", obj], check=True,
                         capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind.isupper() and kind not in ("W", "V"):
            defined.add(name)
    return defined, undefined


def components(nodes, edges):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(edges[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.append(member)
                    if member == node:
                        break
                result.append(sorted(comp))
    return result


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    nm, objs = sys.argv[1], sys.argv[2:]
    name = {o: o.rsplit("/", 1)[-1].removesuffix(".o") + ".c" for o in objs}
    syms = {o: symbols(nm, o) for o in objs}
    owner = {}
    for o in objs:
        for s in syms[o][0]:
            owner[s] = o
    edges = {o: set() for o in objs}
    why = {}
    for o in objs:
        for s in syms[o][1]:
            d = owner.get(s)
            if d and d != o:
                edges[o].add(d)
                why.setdefault((o, d), []).append(s)
    circles = [c for c in components(objs, edges) if len(c) > 1]
    for c in circles:
        print("circle: " + ", ".join(name[o] for o in c))
        for a in c:
            for b in sorted(edges[a] & set(c)):
                print("  %s -> %s: %s" % (name[a], name[b],
                                          " ".join(sorted(why[(a, b)]))))
    if circles:
        return 1
    print("%d files, no circle" % len(objs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
