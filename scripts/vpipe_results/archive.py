"""The archive, docs/results/archive/: each older run is one file, RUN.tar.xz, with its summary
beside it, RUN.json (the run's name, date, commit and card, its README's title, and each file's
size and sha256), so that a device call carries the history as a few compressed files and HISTORY
reads a run's title without unpacking it. scripts/archive-run packs a run; scripts/results --check
unpacks every tarball and fails where its summary does not describe it byte for byte."""
import hashlib
import io
import json
import lzma
import os
import tarfile
import tempfile

from .common import (ARCHIVE, PAGES, RECORDS, RUN_NAME, SUMMARY, TARBALL, ArchiveError, archived, archived_members,
                     archived_runs, archived_summary, entries, first_line, rel)

UNREADABLE = (OSError, EOFError, ValueError, tarfile.TarError, lzma.LZMAError)


def summary_of(run, files):
    """RUN.json as it must be for the tarball holding FILES ({name: (bytes, mode)}): made here only,
    by scripts/archive-run when it packs and by the check when it unpacks. ArchiveError where the
    README, whose first line is the title, is not UTF-8."""
    m = RUN_NAME.match(run)
    readme = files.get(f"{run}/README.md")
    try:
        title = None if readme is None else first_line(readme[0])
    except UnicodeDecodeError as e:
        raise ArchiveError(f"{run}/README.md is not UTF-8 ({e.reason} at byte {e.start}): its first line is "
                           "the run's title (convert it, e.g. iconv -f latin1 -t utf-8)") from None
    return {"run": run, "tarball": run + TARBALL,
            "date": m and m["date"], "commit": m and m["commit"], "card": m and m["card"], "title": title,
            "files": [{"name": n, "mode": f"{mode:04o}", "bytes": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                      for n, (d, mode) in sorted(files.items())]}


def tarball(files):
    """FILES ({name: (bytes, mode)}) as a .tar.xz that depends on nothing else: names sorted, no
    folders, time 0, owner and group 0 and unnamed, xz -9e."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, (data, mode) in sorted(files.items()):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, 0
            t.addfile(info, io.BytesIO(data))
    return lzma.compress(raw.getvalue(), check=lzma.CHECK_CRC64, preset=9 | lzma.PRESET_EXTREME)


def write(run, files):
    """Writes archive/RUN.tar.xz and archive/RUN.json for FILES ({name: (bytes, mode)}); returns
    their paths. Both are made whole first (an ArchiveError, say a README not UTF-8, leaves nothing
    behind), each is written to a temporary file beside its place and renamed there, and a failure
    removes whatever of the two was written: there are both or neither."""
    blobs = [tarball(files), summary_text(summary_of(run, files)).encode("utf-8")]
    paths = [os.path.join(ARCHIVE, run + TARBALL), os.path.join(ARCHIVE, run + SUMMARY)]
    made = []  # temporary files, then the renamed ones
    try:
        for path, blob in zip(paths, blobs):
            fd, tmp = tempfile.mkstemp(dir=ARCHIVE, prefix=f".{os.path.basename(path)}.", suffix=".part")
            made.append(tmp)
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
        for k, path in enumerate(paths):
            os.replace(made[k], path)
            made[k] = path
    except BaseException:
        for p in made:
            if os.path.lexists(p):
                os.remove(p)
        raise
    return paths


def summary_text(summary):
    """A summary as JSON of one line per field and per file, to read and to diff."""
    line = lambda v: json.dumps(v, ensure_ascii=False)
    fields = [f"  {line(k)}: {line(v)}," for k, v in summary.items() if k != "files"]
    files = ",\n".join(f"    {line(f)}" for f in summary["files"])
    return "\n".join(["{", *fields, '  "files": [', files, "  ]", "}"]) + "\n"


def readable(run):
    """RUN's files as archived() gives them, or None where its tarball cannot be read (problems()
    says why)."""
    try:
        return archived(run, mark=False)
    except UNREADABLE:
        return None


def problems():
    """What is wrong in archive/: an entry not packed, a tarball without its summary or a summary
    without its tarball, a tarball that cannot be read or holds another run's files, and a summary
    that does not describe its tarball (a member's bytes or mode changed, one added or removed).
    A link is none of these: integrity.odd_entries() names it, unfollowed."""
    runs = archived_runs()
    out = [loose_problem(e, runs) for e in entries(ARCHIVE)]
    for run in runs:
        out += run_problems(run)
    return [p for p in out if p]


def summary_problems():
    """Each archived run's summary that is not of a summary's shape (common.archived_summary says
    what is wrong): found before anything reads one."""
    out = []
    for run in archived_runs():
        try:
            archived_summary(run)
        except ArchiveError as e:
            out.append(str(e))
    return out


def loose_problem(entry, runs):
    """What is wrong with an entry of archive/ that is no tarball: a summary whose tarball is gone,
    a run's folder or file left unpacked. None for the archive's records and page."""
    where = rel(os.path.join(ARCHIVE, entry))
    if entry in RECORDS or entry in PAGES or entry.endswith(TARBALL):
        return None
    if entry.endswith(SUMMARY):
        run = entry[:-len(SUMMARY)]
        if run in runs or os.path.islink(os.path.join(ARCHIVE, run + TARBALL)):  # a link: named as one
            return None
        return f"{where}: no {run}{TARBALL} beside it (a summary whose tarball is gone, or a run's file not packed)"
    moved = rel(os.path.join(ARCHIVE, "..", entry))
    return (f"{where} is not packed: a run to archive goes in docs/results/ (git mv {where} {moved}), "
            f"then scripts/archive-run {moved}")


def run_problems(run):
    where = rel(os.path.join(ARCHIVE, run + TARBALL))
    try:
        have, files = archived_summary(run), archived_members(run)
    except ArchiveError as e:
        return [str(e)]
    except UNREADABLE as e:
        return [f"{where} or its summary cannot be read: {e}"]
    if have is None:
        return [f"{where} has no summary {run}{SUMMARY} beside it (scripts/archive-run writes both)"]
    try:
        want = summary_of(run, files)
    except ArchiveError as e:  # a README that is not UTF-8
        return [f"{where}: {e}"]
    stray = [n for n in files if not n.startswith(run + "/") or ".." in n.split("/")]
    out = [f"{where} holds {n}, outside its folder {run}/" for n in sorted(stray)]
    return out + differences(run, have, want)


def differences(run, have, want):
    """How the stored summary HAVE (of a summary's shape: common.archived_summary checked it)
    differs from WANT, the one its tarball makes."""
    if have == want:
        return []
    where, tar = rel(os.path.join(ARCHIVE, run + SUMMARY)), run + TARBALL
    out = [f"{where} says {k} {have[k]!r}, {tar} makes {want[k]!r}"
           for k in sorted(want) if k != "files" and have[k] != want[k]]
    listed = {f["name"]: f for f in have["files"]}
    packed = {f["name"]: f for f in want["files"]}
    out += [f"{where} lists {n}, which {tar} does not hold" for n in sorted(set(listed) - set(packed))]
    out += [f"{tar} holds {n}, which {where} does not list" for n in sorted(set(packed) - set(listed))]
    out += [f"{tar}: {n} is not the file {where} lists ({file_difference(packed[n], listed[n])})"
            for n in sorted(set(packed) & set(listed)) if listed[n] != packed[n]]
    return out or [f"{where} does not describe {tar} (scripts/archive-run writes both)"]


def file_difference(packed, listed):
    """What differs between a member as packed and as its summary lists it: 'its sha256 differs'."""
    what = [w for k, w in (("bytes", "size"), ("sha256", "sha256"), ("mode", "mode")) if packed[k] != listed[k]]
    text = f"its {' and '.join(what)} differ{'s' if len(what) == 1 else ''}"
    return text + (f": {packed['mode']} packed, {listed['mode']} listed" if "mode" in what else "")
