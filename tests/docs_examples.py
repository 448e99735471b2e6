#!/usr/bin/env python3
"""tests/docs_examples.py [--root DIR]: the what-if examples of README.md
and BENCHMARKS.md run as written.

Every fenced code block of those files with a `stepcast whatif` command
line is run with sh -e, from a folder laid out as the repository's root
(build/ and data/ as they are, ../shared beside it), and must exit 0 and
print the what-if's step. Blocks that talk to a daemon (`--server`,
`--model`, curl) are run by the Python client's tests
(TestReadmeExamples); a synopsis with [options] or placeholders is not an
example. A block that reads ../shared is skipped, saying so, when that
folder is absent. Ends with `N passed, N failed`; no example found is a
failure."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

DOCS = ("README.md", "BENCHMARKS.md")


def blocks(text):
    """The fenced code blocks of a Markdown text: (first line number, body)."""
    out, body, start = [], None, 0
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if body is None:
                body, start = [], n + 1
            else:
                out.append((start, "\n".join(body) + "\n"))
                body = None
        elif body is not None:
            body.append(line)
    return out


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
        repo = os.path.join(tmp, "repo")
        os.mkdir(repo)
        for name in ("build", "data"):
            os.symlink(os.path.join(a.root, name), os.path.join(repo, name))
        if os.path.isdir(shared):
            os.symlink(shared, os.path.join(tmp, "shared"))
        for doc in DOCS:
            with open(os.path.join(a.root, doc)) as f:
                text = f.read()
            for line, body in blocks(text):
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
        print("FAIL no what-if example found in %s" % ", ".join(DOCS))
        failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
