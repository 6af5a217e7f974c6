"""scripts/results [--check]: write the generated pages from the data, or (--check, in CI) fail
with a diff where a page says what the data does not, and on any problem in the data itself."""
import argparse
import difflib
import glob
import os
import sys

from . import archive, decode_table, history, integrity, pages, suite
from .common import ROOT


def problems_in(s):
    out = [p for path, names in pages.BLOCKS.items() for p in pages.block_problems(path, names)]
    out += archive.problems() + integrity.copies_and_empty_files() + integrity.names_and_contents()
    out += decode_table.continuation_problems()
    out += [f"docs/results/archive/order.json or changes.json lacks {c} or differs from git (run scripts/results "
            "in a git checkout)" for c in history.stale(archived_commits(), s.commit)]
    return out


def unsafe_problems():
    """What stops everything else, found before anything reads the data: a link under docs/results
    (reading would follow it), a summary that is not one (HISTORY reads each summary's title), and
    an archive/order.json or changes.json not of its shape (HISTORY's order and distances)."""
    return integrity.odd_entries() + archive.summary_problems() + history.stored_problems()


def archived_commits():
    return {m.group("commit") for m in map(history.NAME.match, history.runs()) if m and m.group("commit")}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="scripts/results", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail (exit 1, with a diff) where a file differs")
    a = ap.parse_args(argv)
    unsafe = unsafe_problems()
    for p in unsafe:
        print(f"results: {p}", file=sys.stderr)
    if unsafe:
        print(f"results: {len(unsafe)} problem(s) in docs/results stop it before any page is made or checked "
              "(fix them, then run it again)", file=sys.stderr)
        return 1
    s = suite.newest()
    if not a.check:  # keep the archive's order and changes from git before anything reads them
        history.keep(archived_commits(), s.commit)
    bad = 0
    for path, (now, new) in pages.expected(s).items():
        if now == new:
            print(f"results: {path} matches the data ({s.name})")
        elif a.check:
            bad += 1
            sys.stdout.writelines(difflib.unified_diff(now.splitlines(True), new.splitlines(True),
                                                       f"{path} (as committed)", f"{path} (from the data)"))
        else:
            open(os.path.join(ROOT, path), "w", encoding="utf-8").write(new)
            print(f"results: {path}: written from {s.name}")
    texts = [open(p, encoding="utf-8").read() for p in glob.glob(os.path.join(ROOT, "docs", "*.md")) +
             [os.path.join(ROOT, "README.md")]]
    if a.check and history.git("rev-parse", "HEAD") is None:  # said, not dropped silently
        print("results: no git history here: archive/order.json and changes.json are checked as "
              "stored, not against git's commit times and code changes", file=sys.stderr)
    found = problems_in(s) + [f"{r}: no page reads or names it" for r in integrity.unread_runs(texts)]
    for p in found:
        print(f"results: {p}", file=sys.stderr)
    if bad or found:
        print(f"results: {bad} page(s) differ from the data, {len(found)} problem(s) in it "
              "(run scripts/results)", file=sys.stderr)
        return 1
    return 0
