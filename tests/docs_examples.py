#!/usr/bin/env python3
"""tests/docs_examples.py [--root DIR]: the examples of the documents run
as written.

Every fenced code block of README.md, BENCHMARKS.md and docs/ with a
`stepcast whatif` command line is run with sh -e, from a folder laid out
as the repository's root (build/ and data/ as they are, ../shared beside
it), and must exit 0 and print the what-if's step. The walkthrough
(docs/walkthrough.md) runs whole: each of its `sh` blocks, in order, in
one such folder, each with sh -e, must exit 0. Blocks that talk to a daemon (`--server`,
`--model`, curl) are run by the Python client's tests
(TestDocExamples); a synopsis with [options] or placeholders is not an
example. A block that reads ../shared is skipped, saying so, when that
folder is absent. Ends with `N passed, N failed`; no example found is a
failure."""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

WALKTHROUGH = "docs/walkthrough.md"


def documents(root):
    """README.md, BENCHMARKS.md and every page of docs/, relative to root."""
    pages = sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, "docs", "**", "*.md"),
                                                                 recursive=True))
    return ["README.md", "BENCHMARKS.md"] + pages


def blocks(text):
    """The fenced code blocks of a Markdown text: (first line number,
    language, body)."""
    out, body, start, lang = [], None, 0, ""
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if body is None:
                body, start, lang = [], n + 1, line[3:].strip()
            else:
                out.append((start, lang, "\n".join(body) + "\n"))
                body = None
        elif body is not None:
            body.append(line)
    return out


def layout(root, shared, tmp, name):
    """A folder laid out as the repository's root (build/ and data/ linked,
    ../shared beside it) under tmp."""
    top = os.path.join(tmp, name)
    repo = os.path.join(top, "repo")
    os.makedirs(repo)
    for sub in ("build", "data"):
        os.symlink(os.path.join(root, sub), os.path.join(repo, sub))
    if os.path.isdir(shared):
        os.symlink(shared, os.path.join(top, "shared"))
    return repo


def is_example(body):
    cmds = [ln for ln in body.splitlines() if re.match(r"\s*(build/)?stepcast\b.*\bwhatif\b", ln)]
    if not cmds:
        return False
    remote = any(k in body for k in ("--server", "--model", "curl ", "STEPCAST_SERVER"))
    placeholder = any(re.search(r"\[|\bFILE\b|TRACE\.\.\.|\.\.\.$", ln) for ln in cmds)
    return not remote and not placeholder


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))
    a = ap.parse_args()
    shared = os.path.abspath(os.path.join(a.root, "..", "shared"))
    passed = failed = found = 0
    with tempfile.TemporaryDirectory() as tmp:
        repo = layout(a.root, shared, tmp, "examples")
        for doc in documents(a.root):
            with open(os.path.join(a.root, doc)) as f:
                text = f.read()
            for line, _, body in blocks(text):
                if not is_example(body):
                    continue
                found += 1
                where = "%s:%d" % (doc, line)
                if "../shared" in body and not os.path.isdir(shared):
                    print("skip %s: %s is absent" % (where, shared))
                    continue
                run = subprocess.run(["sh", "-e", "-c", body], cwd=repo, capture_output=True, text=True)
                ok = run.returncode == 0 and "step" in run.stdout
                passed, failed = passed + ok, failed + (not ok)
                print("%s %s" % ("ok  " if ok else "FAIL", where))
                if not ok:
                    print("  exit %d: %s" % (run.returncode, (run.stderr or run.stdout).strip()[-400:]))
        if not found:
            print("FAIL no what-if example found in README.md, BENCHMARKS.md or docs/")
            failed += 1
        walk = layout(a.root, shared, tmp, "walkthrough")
        with open(os.path.join(a.root, WALKTHROUGH)) as f:
            steps = [(line, body) for line, lang, body in blocks(f.read()) if lang == "sh"]
        if not steps:
            print("FAIL %s has no sh block" % WALKTHROUGH)
            failed += 1
        for line, body in steps:
            run = subprocess.run(["sh", "-e", "-c", body], cwd=walk, capture_output=True, text=True)
            ok = run.returncode == 0
            passed, failed = passed + ok, failed + (not ok)
            print("%s %s:%d" % ("ok  " if ok else "FAIL", WALKTHROUGH, line))
            if not ok:
                print("  exit %d: %s" % (run.returncode, (run.stderr or run.stdout).strip()[-400:]))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
