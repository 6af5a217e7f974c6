"""Checks on the committed data itself, beside the pages: a file that is byte for byte another
run's (one call's output copied into another's), an empty file, and a run nothing reads or names.
An archived run is checked inside its tarball, as its folder was before it was packed."""
import hashlib
import os

from . import archive
from .common import ARCHIVE, READ, RECORDS, RESULTS, RUN_NAME, SUMMARY, TARBALL, archived_runs, entries, rel, walk

# Archived runs known to hold other calls' files (a script reused its output folder, fixed since).
KNOWN_COPIES = {
    "peers-fair-h200-2026-12-02-b2f5c22": "streams8/runs holds copies of inputs/runs (bench-peers "
                                          "reused /tmp/bench-peers-out) and 86 empty logs",
    "live-h200-2026-11-30-54fa9f5": "run2 holds copies of run1's files (the same defect)",
}


def odd_entries():
    """Every link under docs/results, and whatever else is neither a plain file nor a folder:
    nothing here follows one (a link out of the repository, or a dangling one, would be read as
    the run's data, or stop the check), and each is a problem, found before anything reads."""
    _, others = walk(RESULTS)
    return [f"{rel(p)} is a link: docs/results holds plain files and folders only (a run's data is "
            f"committed, not pointed at)" if os.path.islink(p) else
            f"{rel(p)} is not a plain file or folder: docs/results holds plain files and folders only"
            for p in others]


def run_folders():
    """(name, path) of every run: the suites and loose entries in docs/results, each archived run
    (its tarball), and whatever else archive/ holds (its page; a folder left unpacked). Links are
    left out (odd_entries() names them)."""
    for name in entries(RESULTS):
        if name not in ("archive",) + RECORDS:
            yield name, os.path.join(RESULTS, name)
    if not os.path.isdir(ARCHIVE):
        return
    runs = archived_runs()
    yield from ((run, os.path.join(ARCHIVE, run + TARBALL)) for run in runs)
    for name in entries(ARCHIVE):
        if not (name in RECORDS or name.endswith(TARBALL) or name.endswith(SUMMARY) and name[:-len(SUMMARY)] in runs):
            yield name, os.path.join(ARCHIVE, name)


def folder_files(name, path):
    """A run's folder as {path inside it: (path shown, bytes)}: on disk, or in its tarball (shown
    as docs/results/archive/RUN.tar.xz:RUN/…); None where the run is no folder (a loose file). Links
    inside are left out, unfollowed (odd_entries() names them)."""
    if path.endswith(TARBALL):
        members = archive.readable(name)
        if members is None:  # archive.problems() says why
            return None
        return {m[len(name) + 1:]: (f"{rel(path)}:{m}", d) for m, d in members.items() if m.startswith(name + "/")}
    if not os.path.isdir(path):
        return None
    out = {}
    for p in walk(path)[0]:
        with open(p, "rb") as fh:
            out[os.path.relpath(p, path)] = (rel(p), fh.read())
    return out


def copies_and_empty_files():
    seen, problems = {}, []
    for name, top in run_folders():
        files = folder_files(name, top) if name not in KNOWN_COPIES else None
        for _, (shown, data) in sorted((files or {}).items()):
            if not data:
                problems.append(f"{shown} is empty (an empty log says nothing: delete it)")
            elif len(data) > 256:
                other = seen.setdefault(hashlib.sha256(data).hexdigest(), shown)
                if os.path.dirname(other) != os.path.dirname(shown):
                    problems.append(f"{shown} is byte for byte {other}")
    stale = [f"KNOWN_COPIES names {n}, which is not archived in docs/results/archive/" for n in KNOWN_COPIES
             if n not in archived_runs()]
    return problems + stale


def names_and_contents():
    """A run's folder holds what the run wrote, not prose alone (issue #82: a folder holding only
    a README, named like a cited run, passed); its name says its commit and card
    (KIND-CARD-DATE-COMMIT), and what the run wrote must say the same: commit.txt the commit it
    built (one changed to another commit passed), gpu.txt the card it ran on."""
    problems = []
    for name, top in run_folders():
        files = folder_files(name, top)
        if files is None:
            continue
        if not any(os.path.basename(f) != "README.md" for f in files):
            problems.append(f"{rel(top)} holds no data, only a README")
        m = RUN_NAME.match(name)
        commit_txt, gpu_txt = files.get("commit.txt"), files.get("gpu.txt")
        if m and m["commit"] and commit_txt:
            built = (commit_txt[1].decode("utf-8", "replace").split() or [""])[0]
            if not built.startswith(m["commit"]):
                problems.append(f"{commit_txt[0]} names {built[:12] or 'nothing'}, the folder {m['commit']}")
        if m and m["card"] and m["card"] != "cpu" and gpu_txt:
            if m["card"].upper() not in gpu_txt[1].decode("utf-8", "replace"):
                problems.append(f"{gpu_txt[0]} names no {m['card'].upper()}, as the folder does")
    return problems


def unread_runs(pages):
    """Runs no generator read and no page names: published text resting on nothing, or data no
    one looks at. Every archived run is named by HISTORY; a suite is read by RESULTS."""
    named = "".join(pages)
    stem = lambda name: name if "." not in name else name.split(".")[0]  # a loose file: its run's name
    return [rel(path) for name, path in run_folders() if name not in READ and stem(name) not in named]
