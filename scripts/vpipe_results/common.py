"""Paths, reading the committed data (each read marks its run as read), ranges and rounding."""
import builtins
import functools
import glob
import gzip
import io
import json
import math
import os
import re
import statistics
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "docs", "results")
ARCHIVE = os.path.join(RESULTS, "archive")
READ = set()  # top-level entries of docs/results (and archived runs) some generator opened
# An archived run is two files in archive/: RUN.tar.xz, the folder RUN/ the run wrote (scripts/archive-run
# packs it), and RUN.json, its summary (each file's size and sha256, its README's title). Beside them,
# the archive's own records, and one page kept as a page since pages link to it.
TARBALL, SUMMARY = ".tar.xz", ".json"
RECORDS = ("order.json", "changes.json")
PAGES = ("RESULTS-before-suite.md",)


def rel(path):
    return os.path.relpath(path, ROOT)


def mark_read(path):
    path = os.path.abspath(path)
    for base in (ARCHIVE, RESULTS):
        if path.startswith(base + os.sep):
            READ.add(os.path.relpath(path, base).split(os.sep)[0])
            return


def open_data(path, mode="r"):
    """Opens a committed file (gzip when it ends .gz) and marks its run as read."""
    mark_read(path)
    if path.endswith(".gz"):
        return gzip.open(path, mode + "t" if "b" not in mode else mode)
    return builtins.open(path, mode, encoding=None if "b" in mode else "utf-8")


class ArchiveError(ValueError):
    """What breaks the archive's rules in a run to pack, a tarball or a summary; the message names
    the file and the rule."""


def entries(folder):
    """The names in FOLDER, sorted, less its links: a link is never followed (walk() finds each)."""
    return sorted(e for e in os.listdir(folder) if not os.path.islink(os.path.join(folder, e)))


def walk(top):
    """(files, others) under the folder TOP, paths sorted: its plain files, and what is neither a
    plain file nor a folder (a link, to a file or folder, dangling or not; a pipe). Never follows
    a link: one is listed where it lies."""
    if os.path.islink(top) or not os.path.isdir(top):
        return [], [top]
    files, others = [], []
    for folder, dirs, names in os.walk(top):  # os.walk lists a link to a folder in DIRS, unfollowed
        for name in dirs + names:
            p = os.path.join(folder, name)
            if os.path.islink(p) or not (os.path.isdir(p) or os.path.isfile(p)):
                others.append(p)
            elif name in names:
                files.append(p)
    return sorted(files), sorted(others)


def archived_runs():
    """The archived runs' names, sorted: every RUN of an archive/RUN.tar.xz (a link is none)."""
    return [e[:-len(TARBALL)] for e in entries(ARCHIVE) if e.endswith(TARBALL)]


def archived(run, mark=True):
    """An archived run's files, {name: bytes}, as archive/RUN.tar.xz holds them: RUN/… (a run
    that was loose files, RUN.json and RUN.md, is the folder of those). Unpacked once. MARK marks
    the run as read (the checks, which read every run, pass False)."""
    if mark:
        READ.add(run)
    return {n: d for n, (d, _) in archived_members(run).items()}


@functools.lru_cache(maxsize=None)
def archived_members(run):
    """An archived run's files with their modes, {name: (bytes, mode)}. ArchiveError where a member
    is not a plain file or a name comes twice (the later would hide the earlier when unpacked)."""
    path, out = os.path.join(ARCHIVE, run + TARBALL), {}
    with tarfile.open(path, "r:xz") as t:
        for m in t:
            if not m.isfile():
                raise ArchiveError(f"{rel(path)}: {m.name} is not a plain file")
            if m.name in out:
                raise ArchiveError(f"{rel(path)} holds {m.name} twice (tar -x would keep the later one only)")
            out[m.name] = (t.extractfile(m).read(), m.mode)
    return out


# A summary's fields and their types; each file's record (FILE_FIELDS) likewise. A mode is octal
# as ls shows it: "0644", "0755".
SUMMARY_FIELDS = {"run": str, "tarball": str, "date": (str, type(None)), "commit": (str, type(None)),
                  "card": (str, type(None)), "title": (str, type(None)), "files": list}
FILE_FIELDS = {"name": str, "mode": str, "bytes": int, "sha256": str}


def archived_summary(run):
    """An archived run's summary, archive/RUN.json (written with its tarball by scripts/archive-run
    and checked against it by scripts/results --check), or None where it has none. Every reader
    comes here, so none gets one that is not UTF-8 JSON of SUMMARY_FIELDS: ArchiveError says what
    is wrong ("docs/results/archive/RUN.json: …")."""
    path = os.path.join(ARCHIVE, run + SUMMARY)
    if not os.path.lexists(path):
        return None
    where = rel(path)
    if os.path.islink(path) or not os.path.isfile(path):
        raise ArchiveError(f"{where} is a link or not a plain file (scripts/archive-run writes a file)")
    with builtins.open(path, "rb") as f:
        raw = f.read()
    try:
        summary = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ArchiveError(f"{where}: not UTF-8 ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise ArchiveError(f"{where}: not JSON ({e.msg}, line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise ArchiveError(f"{where}: not a summary (JSON nested too deep to read)") from None
    wrong = summary_schema_problem(summary)
    if wrong:
        raise ArchiveError(f"{where}: {wrong} (scripts/archive-run writes it)")
    return summary


def summary_schema_problem(summary):
    """What in SUMMARY (parsed JSON) is not of a summary's shape, or None."""
    wrong = shape_problem(summary, SUMMARY_FIELDS, "the summary")
    for k, f in enumerate([] if wrong else summary["files"], 1):
        wrong = wrong or shape_problem(f, FILE_FIELDS, f"file {k}")
    if wrong:
        return wrong
    names = [f["name"] for f in summary["files"]]
    twice = sorted({n for n in names if names.count(n) > 1})
    return f"it lists {twice[0]} twice" if twice else None


def shape_problem(obj, fields, what):
    """What in OBJ is not an object of FIELDS ({key: type}) exactly, or None."""
    if not isinstance(obj, dict):
        return f"{what} is {json.dumps(obj)[:40]}, not an object"
    missing, extra = sorted(set(fields) - set(obj)), sorted(set(obj) - set(fields))
    if missing or extra:
        return f"{what} " + " and ".join([f"lacks {', '.join(missing)}"] * bool(missing) +
                                         [f"has {', '.join(extra)}, no field of a summary"] * bool(extra))
    for key, kind in fields.items():
        if isinstance(obj[key], bool) or not isinstance(obj[key], kind):  # JSON's true is no number
            return f"{what}'s {key} is {json.dumps(obj[key])[:40]}, not {_TYPE_NAMES[kind]}"
    return None


_TYPE_NAMES = {str: "text", int: "a whole number", list: "a list", (str, type(None)): "text or null"}


def first_line(data):
    """A README's first line as a title: '# A run, its point.' → 'A run, its point'."""
    line = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").readline()
    return line.strip().lstrip("# ").rstrip(".")


def load_json(path):
    with open_data(path) as f:
        return json.load(f)


def load_jsonl(path):
    with open_data(path) as f:
        return [json.loads(line) for line in f if line.strip()]


# A run's folder (or an archived file's stem): KIND-[CARD-]DATE[-COMMIT][-REST], of lower-case
# letters, digits and hyphens; CARD the GPU it ran on (h100, h200) or cpu.
RUN_NAME = re.compile(r"^(?P<kind>[a-z0-9][a-z0-9-]*?)(?:-(?P<card>h100|h200|cpu))?-(?P<date>\d{4}-\d{2}-\d{2})"
                      r"(?:-(?P<commit>[0-9a-f]{7,40}))?(?P<rest>-[a-z0-9-]+)?$")
RUN_FORM = "KIND-[CARD-]DATE[-COMMIT][-NOTE] of a-z, 0-9 and hyphens, e.g. peers-h200-2026-12-02-b2f5c22"


def newest_run(kind, holding=None):
    """The newest folder docs/results/KIND-[CARD-]DATE-COMMIT, on whichever GPU: by date, then name
    (on one day, the run a later one supersedes goes to the archive); with HOLDING, the newest that
    holds that file (a run may hold some parts of a script's work only)."""
    found = runs_of(kind, holding)
    return found[0] if found else None


def runs_of(kind, holding=None):
    """Every top-level folder of KIND (holding HOLDING, where given), newest first."""
    found = [(m["date"], p) for p in glob.glob(os.path.join(RESULTS, kind + "-*"))
             if os.path.isdir(p) and (m := RUN_NAME.match(os.path.basename(p))) and m["kind"] == kind
             and (holding is None or os.path.exists(os.path.join(p, holding)))]
    return [p for _, p in sorted(found, reverse=True)]


def card(run):
    """The GPU a run's folder name says it ran on ("H100", "H200"), or "GPU" where it names none."""
    m = RUN_NAME.match(os.path.basename(run))
    return m["card"].upper() if m and m["card"] and m["card"] != "cpu" else "GPU"


def run_commit(run):
    """The short commit a run's commit.txt names (the build it measured), with "-dirty" when
    the build had changes not yet committed."""
    with open_data(os.path.join(run, "commit.txt")) as f:
        named = f.read().split()[0]
    return named[:7] + ("-dirty" if named.endswith("-dirty") else "")


def floor_to(v, digits=0):
    """A minimum, rounded down: the data supports no more."""
    k = 10 ** digits
    return math.floor(v * k + 1e-9) / k


def ceil_to(v, digits=0):
    """A maximum, rounded up."""
    k = 10 ** digits
    return math.ceil(v * k - 1e-9) / k


def span(values, digits=0, unit=""):
    """Every run's value as a range, the minimum rounded down and the maximum up: '296–318'.
    One value, or all equal after rounding: that value. No values: '–'."""
    values = [v for v in values if v is not None]
    if not values:
        return "–"
    f = f"{{:,.{digits}f}}"
    if min(values) == max(values):  # one value: rounded to the nearest
        return f.format(values[0]) + unit
    lo, hi = floor_to(min(values), digits), ceil_to(max(values), digits)
    text = f.format(lo) if f.format(lo) == f.format(hi) else f"{f.format(lo)}–{f.format(hi)}"
    return text + unit


def plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def median(values):
    return statistics.median(values)


def table(header, rows):
    """A Markdown table: header cells, then rows of cells."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return out


def anchor(title):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    keep = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return keep.replace(" ", "-")
