"""Checks on the committed data itself, beside the pages: a file that is byte for byte another
run's (one call's output copied into another's), an empty file, and a run nothing reads or names."""
import hashlib
import os

from .common import ARCHIVE, READ, RESULTS, RUN_NAME, rel

# Archived runs known to hold other calls' files (a script reused its output folder, fixed since).
KNOWN_COPIES = {
    "peers-fair-h200-2026-12-02-b2f5c22": "streams8/runs holds copies of inputs/runs (bench-peers "
                                          "reused /tmp/bench-peers-out) and 86 empty logs",
    "live-h200-2026-11-30-54fa9f5": "run2 holds copies of run1's files (the same defect)",
}


def run_folders():
    """(name, path) of every run: the suites and loose entries in docs/results, and the archive's."""
    for base in (RESULTS, ARCHIVE):
        if not os.path.isdir(base):
            continue
        for name in sorted(os.listdir(base)):
            if name not in ("archive", "order.json", "changes.json"):
                yield name, os.path.join(base, name)


def copies_and_empty_files():
    seen, problems = {}, []
    for name, top in run_folders():
        if name in KNOWN_COPIES or not os.path.isdir(top):
            continue
        for folder, _, names in os.walk(top):
            for f in sorted(names):
                path = os.path.join(folder, f)
                size = os.path.getsize(path)
                if size == 0:
                    problems.append(f"{rel(path)} is empty (an empty log says nothing: delete it)")
                elif size > 256:
                    digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
                    other = seen.setdefault(digest, path)
                    if os.path.dirname(other) != folder:
                        problems.append(f"{rel(path)} is byte for byte {rel(other)}")
    stale = [f"KNOWN_COPIES names {n}, which is not under docs/results/archive/" for n in KNOWN_COPIES
             if not os.path.exists(os.path.join(ARCHIVE, n))]
    return problems + stale


def names_and_contents():
    """A run's folder holds what the run wrote, not prose alone (issue #82: a folder holding only
    a README, named like a cited run, passed); its name says its commit and card
    (KIND-CARD-DATE-COMMIT), and what the run wrote must say the same: commit.txt the commit it
    built (one changed to another commit passed), gpu.txt the card it ran on."""
    problems = []
    for name, top in run_folders():
        m = RUN_NAME.match(name)
        if not os.path.isdir(top):
            continue
        if not any(f != "README.md" for _, _, files in os.walk(top) for f in files):
            problems.append(f"{rel(top)} holds no data, only a README")
        if not m:
            continue
        commit_txt, gpu_txt = os.path.join(top, "commit.txt"), os.path.join(top, "gpu.txt")
        if m["commit"] and os.path.exists(commit_txt):
            built = (open(commit_txt, encoding="utf-8").read().split() or [""])[0]
            if not built.startswith(m["commit"]):
                problems.append(f"{rel(commit_txt)} names {built[:12] or 'nothing'}, the folder {m['commit']}")
        if m["card"] and m["card"] != "cpu" and os.path.exists(gpu_txt):
            if m["card"].upper() not in open(gpu_txt, encoding="utf-8").read():
                problems.append(f"{rel(gpu_txt)} names no {m['card'].upper()}, as the folder does")
    return problems


def unread_runs(pages):
    """Runs no generator read and no page names: published text resting on nothing, or data no
    one looks at. Every archived run is named by HISTORY; a suite is read by RESULTS."""
    named = "".join(pages)
    stem = lambda name: name if "." not in name else name.split(".")[0]  # a loose file: its run's name
    return [rel(path) for name, path in run_folders() if name not in READ and stem(name) not in named]
