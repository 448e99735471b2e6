#!/usr/bin/env python3
"""tests/docs_check.py [--build DIR]: the documents agree with the programs.

  - `stepcast --help` lists the commands clients/main.c runs, and those
    that docs/commands/ has a page for
    (docs/commands/<command>.md), no more and no fewer, and the index
    docs/commands/README.md links each page;
  - each page is headed `# stepcast <command>` and holds, under `## Usage`,
    the output of `stepcast <command> --help` exactly as the program prints
    it; its `## Options` list names exactly the options of that usage, and
    every option `stepcast --help` gives the command is in the usage;
  - docs/commands/stepcastd.md likewise for `stepcastd --help` up to its
    list of settings, its options those that are not settings
    (docs/configuration.md lists the settings);
  - docs/api.md and docs/configuration.md are what scripts/gen-docs makes
    from the build (--check).

Prints one line per check and ends with `N passed, N failed`."""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def run(argv):
    r = subprocess.run(argv, capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def overview(text):
    """The commands of `stepcast --help`, each with the options its lines
    give: a command line is indented two spaces; the lines of its synopsis
    that follow are indented further and start with '[' or '-'."""
    cmds, current = {}, None
    for line in text.splitlines():
        m = re.match(r"^  ([a-z][a-z-]*)\b", line)
        if m:
            current = cmds.setdefault(m.group(1), set())
            current.update(OPTION.findall(line.split(": ")[0] if ": " in line else line))
        elif current is not None and re.match(r"^ {4,}[\[-]", line):
            current.update(OPTION.findall(line))
        elif not line.startswith("      "):
            current = None
    return cmds


def page_sections(text):
    """A page's `## ` sections: name -> body."""
    out, name = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            name = line[3:].strip()
            out[name] = []
        elif name:
            out[name].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def usage_block(section):
    """The first fenced block of a section, as it is between the fences."""
    m = re.search(r"^```[a-z]*\n(.*?)^```", section, re.S | re.M)
    return m.group(1) if m else None


def listed_options(section):
    """The options a `## Options` list names: its items' leading `--opt`s."""
    opts = set()
    for line in section.splitlines():
        m = re.match(r"^- (`[^`]*`(?:,? (?:or )?`[^`]*`)*)", line)
        if m:
            opts.update(OPTION.findall(m.group(1)))
    return opts


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what, why=""):
        self.passed, self.failed = self.passed + bool(ok), self.failed + (not ok)
        print("%s %s%s" % ("ok  " if ok else "FAIL", what, "" if ok else ": " + why))
        return ok


def check_page(c, path, title, usage, options):
    """One page against its program's usage text and option set."""
    rel = os.path.relpath(path, ROOT)
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        c.check(False, rel, str(e))
        return
    c.check(text.startswith(title + "\n"), rel + " heading", "the first line is not '%s'" % title)
    sections = page_sections(text)
    block = usage_block(sections.get("Usage", ""))
    c.check(block == usage, rel + " usage",
            "its ## Usage block differs from the program's usage:\n%s" % usage if block else "no ## Usage block")
    listed = listed_options(sections.get("Options", ""))
    c.check(listed == options, rel + " options",
            "the usage has %s that the page does not list; the page lists %s that the usage lacks"
            % (sorted(options - listed) or "nothing", sorted(listed - options) or "nothing"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = ap.parse_args()
    c = Checks()
    cli, daemon = os.path.join(a.build, "stepcast"), os.path.join(a.build, "stepcastd")
    pages_dir = os.path.join(ROOT, "docs", "commands")

    rc, text, _ = run([cli, "--help"])
    cmds = overview(text) if rc == 0 else {}
    c.check(rc == 0 and cmds, "stepcast --help lists commands", "exit %d" % rc)
    with open(os.path.join(ROOT, "clients", "main.c")) as f:
        dispatched = set(re.findall(r'\{"([a-z][a-z-]*)", cmd_', f.read()))
    c.check(dispatched and dispatched == set(cmds), "stepcast --help lists the commands clients/main.c runs",
            "run but not listed: %s; listed but not run: %s"
            % (sorted(dispatched - set(cmds)) or "none", sorted(set(cmds) - dispatched) or "none"))
    pages = {f[:-3] for f in os.listdir(pages_dir) if f.endswith(".md")} - {"README", "stepcastd"}
    c.check(set(cmds) == pages, "one page per command",
            "commands without a page: %s; pages of no command: %s"
            % (sorted(set(cmds) - pages) or "none", sorted(pages - set(cmds)) or "none"))
    with open(os.path.join(pages_dir, "README.md")) as f:
        index = f.read()
    unlinked = sorted(p for p in pages | {"stepcastd"} if "(%s.md)" % p not in index)
    c.check(not unlinked, "docs/commands/README.md links every page", "it lacks %s" % unlinked)

    for cmd in sorted(cmds):
        rc, usage, err = run([cli, cmd, "--help"])
        if not c.check(rc == 0 and usage.startswith("usage: "), "stepcast %s --help" % cmd,
                       "exit %d: %s" % (rc, (err or usage).strip()[:200])):
            continue
        options = set(OPTION.findall(usage))
        c.check(cmds[cmd] <= options, "stepcast --help's %s options are in its usage" % cmd,
                "the usage lacks %s" % sorted(cmds[cmd] - options))
        check_page(c, os.path.join(pages_dir, cmd + ".md"), "# stepcast " + cmd, usage, options)

    rc, usage, _ = run([daemon, "--help"])
    rc2, settings, _ = run([daemon, "--print-settings"])
    if c.check(rc == 0 and rc2 == 0, "stepcastd --help and --print-settings", "exit %d, %d" % (rc, rc2)):
        # the usage up to its list of settings, which docs/configuration.md
        # holds (made from the same table, checked below)
        head = usage[:usage.index("Settings:") + len("Settings:")] + "\n" if "Settings:" in usage else usage
        flags = {s["flag"] for s in json.loads(settings) if s["flag"]}
        own = set(OPTION.findall(head)) - flags
        check_page(c, os.path.join(pages_dir, "stepcastd.md"), "# stepcastd", head, own)

    rc, out, err = run([sys.executable, os.path.join(ROOT, "scripts", "gen-docs"), "--check", "--build", a.build])
    for line in out.splitlines():
        if line.startswith(("ok  ", "FAIL")):
            c.check(line.startswith("ok"), line[5:].split(":")[0], line.split(": ", 1)[-1])
    if rc and "FAIL" not in out:
        c.check(False, "scripts/gen-docs --check", (err or out).strip()[-300:])
    print("%d passed, %d failed" % (c.passed, c.failed))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
