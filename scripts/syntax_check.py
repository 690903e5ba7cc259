#!/usr/bin/env python3
"""Checks, without generating code, every source of a build folder that its last build did not compile.

usage: scripts/syntax_check.py BUILD_DIR

CI builds only a part of the asan preset (scripts/test_asan.sh --ci); the rest (the other tests, the app, the UI,
the benchmark) is compiled only by the whole run, by hand. The preset's compiler, clang 14, refuses some code gcc
takes (a structured binding captured by a lambda: twice between two such runs, 2026-11-27 and 12-05). This runs
each compile command of BUILD_DIR/compile_commands.json whose object file is missing with -fsyntax-only, on every
core, prints the compiler's errors of each failing source and exits 1 if any failed.
"""
import json
import os
import shlex
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor


def syntax_only(command):
    """The compile command without its outputs (object, dependency file): -fsyntax-only instead."""
    args = shlex.split(command)
    out, skip = [], 0
    for i, a in enumerate(args):
        if skip:
            skip -= 1
            continue
        if a in ("-o", "-MT", "-MF", "-MQ"):
            skip = 1
            continue
        if a in ("-MD", "-MMD"):
            continue
        out.append(a)
    return out + ["-fsyntax-only"]


def object_of(command):
    args = shlex.split(command)
    return args[args.index("-o") + 1] if "-o" in args else None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    todo = []
    for e in entries:
        obj = object_of(e["command"])
        if obj and not os.path.exists(os.path.join(e["directory"], obj)):
            todo.append(e)
    start = time.time()

    def check(e):
        r = subprocess.run(syntax_only(e["command"]), cwd=e["directory"], capture_output=True, text=True)
        return e["file"], r.returncode, r.stderr

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(check, todo))
    failed = [(f, err) for f, rc, err in results if rc != 0]
    for f, err in failed:
        print(f"syntax_check.py: {f} does not compile with the preset's compiler:\n{err}")
    print(f"syntax_check.py: {len(todo) - len(failed)} of {len(todo)} sources the build left out compile "
          f"(syntax only), {len(entries) - len(todo)} built; {time.time() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
