"""docs/HISTORY.md: one line per archived run (docs/results/archive/RUN.tar.xz): its date, its
commit, what it measured (its summary's title, from its README), and what changed in the code
since, up to the newest suite's commit. The page reads summaries only, no tarball.

A run's order and what changed since come from archive/order.json and archive/changes.json,
which `scripts/results` keeps from git, so that a tree without history makes the same page."""
import json
import os
import re
import subprocess

from .common import (ARCHIVE, PAGES, ROOT, RUN_NAME, SUMMARY, ArchiveError, shape_problem, archived_runs, archived_summary,
                     mark_read, rel)

ORDER = os.path.join(ARCHIVE, "order.json")      # commit → its commit time
CHANGES = os.path.join(ARCHIVE, "changes.json")  # commit → code commits and files changed since the suite's
CODE = ["pipeline", "base", "memory", "kernels", "apps", "python", "CMakeLists.txt"]  # what a GPU run runs
KINDS = {  # a run's kind (its name without machine, date and commit) → what it measured, where no README says
    "bench-kernels": "vpipe bench kernels (the first tables)", "bench-mem": "vpipe bench mem",
    "bench-pipeline": "vpipe bench pipeline: decode-only, no-encoder, end-to-end and encode-only fps",
    "bench-download-ab": "the download ring's slot against a copy, A/B",
    "ci-times": "clean-clone CI phase times", "decode": "vpipe bench decode: raw NVDEC, --streams, --decode-sessions",
    "gpu-smoke": "the GPU smoke: every subcommand, strategy and workload, Python",
    "gpu-check": "gpu_test and vpipe info", "gpu-test": "gpu_test on the H200",
    "encode-segments": "segment-parallel libx264 (vpipe bench encode)", "live": "live inputs: glass-to-glass latency, paced streams",
    "peers": "vpipe against FFmpeg, PyTorch and OpenCV", "soak": "vpipe soak, every strategy",
    "soak-parallel": "vpipe soak --compare … --parallel, four soaks at once", "streams": "--streams N per strategy",
    "sweep": "the GPU path against the CPU path, every size", "sweep-subsets": "the sweep on the newer filters",
    "probe-ab": "the soak's largest-block probe, A/B", "blur-half-sim": "a simulated half-precision blur",
    "nvdec-odd-height": "NVDEC on odd heights", "fuzz-ci": "the fuzzers in a CI run",
    "reliability-cpu": "the reliability corpus and edge cases on the CPU path"}
NAME = RUN_NAME


def runs():
    """The archived runs' names (scripts/archive-run packed each, a folder or loose files, into one)."""
    return archived_runs()


def git(*args):
    try:
        r = subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True)
    except OSError:
        return None
    return r.stdout.strip() if r.returncode == 0 else None


# Each stored file's entries: a commit (7 to 40 hex digits) → its value's shape.
COMMIT = re.compile(r"[0-9a-f]{7,40}")
CHANGE_FIELDS = {"suite": str, "code_commits": int, "code_files": int}


def _entry_problem(path, value):
    """What in one entry's value is not its file's shape, or None."""
    if path == ORDER:
        ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
        return None if ok else f"{json.dumps(value)[:40]} is not a commit time (seconds since 1970)"
    return shape_problem(value, CHANGE_FIELDS, "its entry")


def stored(path):
    """order.json or changes.json as stored, each entry of its shape (ArchiveError naming the file
    and the entry where one is not: stored_problems finds it before anything reads them)."""
    if not os.path.exists(path):
        return {}
    mark_read(path)
    where = rel(path)
    try:
        d = json.loads(open(path, "rb").read().decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ArchiveError(f"{where}: not UTF-8 ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ArchiveError(f"{where}: not JSON ({e.msg}, line {e.lineno} column {e.colno})") from None
    if not isinstance(d, dict):
        raise ArchiveError(f"{where}: not an object of commits")
    for commit, value in d.items():
        wrong = None if COMMIT.fullmatch(commit) else "not a commit"
        wrong = wrong or _entry_problem(path, value)
        if wrong:
            raise ArchiveError(f"{where}: {commit[:40]!r}: {wrong} (scripts/results writes it from git)")
    return d


def stored_problems():
    """What in archive/order.json or changes.json is not of its shape, each naming the file."""
    out = []
    for path in (ORDER, CHANGES):
        try:
            stored(path)
        except ArchiveError as e:
            out.append(str(e))
    return out


def from_git(commits, suite_commit):
    """Each commit's time, and the code commits and files changed from it to the suite's commit,
    as git says; empty where git or the commit is missing (a `git archive` tree)."""
    order, changes = {}, {}
    for c in commits:
        t = git("show", "-s", "--format=%ct", c)
        if t:
            order[c] = int(t)
        n = git("rev-list", "--count", f"{c}..{suite_commit}", "--", *CODE)
        files = git("diff", "--name-only", c, suite_commit, "--", *CODE)
        if n is not None and files is not None:
            changes[c] = {"suite": suite_commit, "code_commits": int(n),
                          "code_files": len([f for f in files.splitlines() if f])}
    return order, changes


def keep(commits, suite_commit):
    """Brings order.json and changes.json up to date from git (scripts/results without --check)."""
    order, changes = from_git(commits, suite_commit)
    for path, fresh in ((ORDER, order), (CHANGES, changes)):
        d = {**stored(path), **fresh}
        with open(path, "w") as f:
            json.dump(dict(sorted(d.items())), f, indent=0)
            f.write("\n")


def stale(commits, suite_commit):
    """What the stored files lack or say differently from git: the page rests on the stored ones."""
    order, changes = stored(ORDER), stored(CHANGES)
    git_order, git_changes = from_git(commits, suite_commit)
    out = [c for c in sorted(commits) if c not in order or changes.get(c, {}).get("suite") != suite_commit]
    out += [c for c in sorted(git_order) if c not in out and (order.get(c) != git_order[c]
                                                               or changes.get(c) != git_changes.get(c))]
    return out


def what(run):
    title = (archived_summary(run) or {}).get("title")
    if title:
        return title[:150]
    m = NAME.match(run)
    kind = m.group("kind") if m else run
    return KINDS.get(kind, kind.replace("-", " "))


def page(s):
    found = runs()
    parsed = {stem: NAME.match(stem) for stem in found}
    commits = sorted({m.group("commit") for m in parsed.values() if m and m.group("commit")})
    order, changes = stored(ORDER), stored(CHANGES)
    def key(stem):
        m = parsed[stem]
        return (m.group("date") if m else "", order.get(m.group("commit"), 0) if m else 0, stem)
    lines = []
    for stem in sorted(found, key=key):
        m = parsed[stem]
        c = m.group("commit") if m else None
        ch = changes.get(c) if c else None
        since = (f"{ch['code_commits']} code commits, {ch['code_files']} files" if ch else "–")
        lines.append(f"| {m.group('date') if m else '–'} | {f'`{c}`' if c else '–'} | "
                     f"[{stem}](results/archive/{stem}{SUMMARY}) | {what(stem).replace('|', '/')} | {since} |")
    return "\n".join([
        "# History", "",
        "<!-- generated by scripts/results from docs/results/archive/: change the generator "
        "(scripts/vpipe_results/history.py), not this page -->", "",
        f"Every run before the newest suite ([RESULTS](RESULTS.md): `{s.name}`, commit `{s.commit}`), oldest "
        f"first: {len(found)} runs. Their figures are of the code at their commit; \"changed since\" counts the "
        f"commits and files in {', '.join(CODE)} between that commit and `{s.commit}`. RESULTS.md as it stood "
        "before the suite, with every table these runs made, is kept: "
        f"[results/archive/{PAGES[0]}](results/archive/{PAGES[0]}).", "",
        "| date | commit | run | what it measured | changed since |", "|---|---|---|---|---|", *lines]) + "\n"
