#!/usr/bin/env bash
# scripts/results --check on a tree without git history (a copy of the working tree's scripts/,
# docs/ and README, no .git): it must pass as on the clone, since a suite's order is in its own
# files and the archive's in archive/order.json and changes.json. Then each mutation must fail it
# (issue #42): an archived run's entry missing from order.json; README's generated block with its
# markers deleted (its text then passes for typed) or copied; the suite's raw runs edited under
# their stored median; the raw runs and the median edited together (the page then differs); a file
# copied from one run's folder into another's; an empty log; a run folder nothing reads or names;
# a run's commit.txt or gpu.txt saying another commit or card than its folder's name; a run's
# folder holding only its README. An archived run is a tarball and its summary
# (scripts/archive-run): the mutations above reach inside it (unpacked, changed, packed again with
# a fresh summary, so the check must find them by what the files say), and the tarball must match
# its summary: a byte changed in a file or its mode, a file deleted or added, or held twice, a
# summary edited, one without the other, a file outside the run's folder, a run left unpacked, a
# summary that is not one (cut short, empty, not UTF-8, a field of another type), each named as a
# problem of that file, never a traceback; a commit.txt that is not UTF-8. A link under
# docs/results (out of the repository, dangling, to a tarball, inside a run) is one problem, "is a
# link", and never followed. And scripts/archive-run refuses, changing nothing, the archive itself,
# an archived run's files, a run named with a space, a run holding a link and one whose README is
# not UTF-8. Runs and files are drawn at random, the seed printed.
set -euo pipefail
src=${1:?usage: results_mutations_test.sh SOURCE_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fresh() { rm -rf "$tmp/tree" && mkdir -p "$tmp/tree" && cp -r "$src/scripts" "$src/docs" "$src/README.md" "$tmp/tree/"; }
check_fails() {  # check_fails WHAT REASON: the check must fail, saying REASON
  if python3 "$tmp/tree/scripts/results" --check >"$tmp/out.txt" 2>&1; then echo "FAIL: $1 passed the check"; exit 1; fi
  grep -q -- "$2" "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "FAIL: $1: not for the reason '$2'"; exit 1; }
  ! grep -q Traceback "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "FAIL: $1: a traceback, not a problem named"; exit 1; }
  echo "ok: $1 fails the check"
}
seed=${VPIPE_RESULTS_SEED:-$RANDOM}
echo "results mutations: seed $seed (VPIPE_RESULTS_SEED)"
archive=$tmp/tree/docs/results/archive
repack() {  # repack RUN CMD [keep]: CMD in archived RUN's folder, unpacked; then packed again by
            # scripts/archive-run with a fresh summary, or with the summary as it was (keep)
  tar -xJf "$archive/$1.tar.xz" -C "$tmp/tree/docs/results"
  (cd "$tmp/tree/docs/results/$1" && eval "$2")
  cp "$archive/$1.json" "$tmp/summary.json" && rm "$archive/$1.tar.xz" "$archive/$1.json"
  python3 "$tmp/tree/scripts/archive-run" "$tmp/tree/docs/results/$1" >/dev/null
  [[ ${3:-} != keep ]] || cp "$tmp/summary.json" "$archive/$1.json"
}
edit() {  # edit RUN CMD: CMD in RUN's folder (relative to docs/results; archive/RUN inside its tarball)
  if [[ $1 == archive/* ]]; then repack "${1#archive/}" "$2"; else (cd "$tmp/tree/docs/results/$1" && eval "$2"); fi
}
flip() {  # flip FILE OFFSET: one bit of one byte changed
  python3 -c "import sys; p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[int(sys.argv[2])] ^= 1
open(p, 'wb').write(b)" "$1" "$2"
}
draw() {  # run, file, offset, mode: an archived run, one of its files, a byte of it and its mode,
         # drawn by the seed from the runs of two files or more that no page but HISTORY reads or names
  read -r run file offset mode < <(python3 - "$src" "$seed" <<'PY'
import glob, json, os, random, sys
src, seed = sys.argv[1], int(sys.argv[2])
pages = "".join(open(p, encoding="utf-8").read() for p in glob.glob(f"{src}/docs/*.md") + [f"{src}/README.md"]
                if not p.endswith("HISTORY.md"))
summaries = [json.load(open(p)) for p in sorted(glob.glob(f"{src}/docs/results/archive/*.json"))
             if os.path.exists(p[:-len(".json")] + ".tar.xz")]
random.seed(seed)
s = random.choice([s for s in summaries if len(s["files"]) > 1 and s["run"] not in pages])
f = random.choice([f for f in s["files"] if f["bytes"] > 0])
print(s["run"], f["name"][len(s["run"]) + 1:], random.randrange(f["bytes"]), f["mode"])
PY
)
  echo "results mutations: archived run $run, its $file, byte $offset, mode $mode"
}
archive_mutations() {  # on the drawn run
  fresh
  repack "$run" ":"
  cmp -s "$archive/$run.json" "$src/docs/results/archive/$run.json" || { echo "FAIL: $run packed again: another summary"; exit 1; }
  cp "$archive/$run.tar.xz" "$tmp/once.tar.xz" && repack "$run" ":"
  cmp -s "$archive/$run.tar.xz" "$tmp/once.tar.xz" || { echo "FAIL: $run packed twice: two tarballs"; exit 1; }
  python3 "$tmp/tree/scripts/results" --check >"$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; echo "FAIL: $run packed again fails the check"; exit 1; }
  echo "ok: $run unpacked and packed again: the same summary, the same bytes twice, and the check passes"
  repack "$run" "flip '$file' $offset" keep
  check_fails "a byte changed in $run's $file" "$file is not the file .* lists (its sha256 differs)"
  fresh && repack "$run" "rm -- '$file'" keep
  check_fails "$run's $file deleted from its tarball" "lists $run/$file, which $run.tar.xz does not hold"
  fresh && repack "$run" "echo more >added.txt" keep
  check_fails "a file added to $run's tarball" "holds $run/added.txt, which .* does not list"
  fresh
  python3 - "$archive/$run.json" "$run/$file" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for f in d["files"]:
    if f["name"] == sys.argv[2]:
        f["sha256"] = "0" * 64
json.dump(d, open(sys.argv[1], "w"))
PY
  check_fails "$run's summary with another sha256 for $file" "$file is not the file .* lists"
  fresh && rm "$archive/$run.json"
  check_fails "$run's tarball without its summary" "$run.tar.xz has no summary"
  fresh && rm "$archive/$run.tar.xz"
  check_fails "$run's summary without its tarball" "$run.json: no $run.tar.xz beside it"
  fresh && truncate -s $(($(stat -c %s "$archive/$run.tar.xz") / 2)) "$archive/$run.tar.xz"
  check_fails "$run's tarball cut short" "$run.tar.xz or its summary cannot be read"
  fresh
  python3 - "$tmp/tree/scripts" "$run" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from vpipe_results import archive, common
run = sys.argv[2]
files = common.archived_members(run)
archive.write(run, {**files, "elsewhere/stray.txt": (b"not this run's\n", 0o644)})
PY
  check_fails "a file outside $run's folder in its tarball" "holds elsewhere/stray.txt, outside its folder"
  fresh && repack "$run" "chmod $([[ $mode == 0755 ]] && echo 0644 || echo 0755) -- '$file'" keep
  check_fails "$run's $file with its mode changed" "$file is not the file .* lists (its mode differs"
  fresh
  python3 - "$tmp/tree/scripts" "$run" "$run/$file" <<'PY'
import io, lzma, sys, tarfile
sys.path.insert(0, sys.argv[1])
from vpipe_results import common
run, twice = sys.argv[2:]
raw = io.BytesIO()
with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
    for name, (data, mode) in sorted(common.archived_members(run).items()) + [(twice, (b"another\n", 0o644))]:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), mode
        t.addfile(info, io.BytesIO(data))
open(f"{common.ARCHIVE}/{run}.tar.xz", "wb").write(lzma.compress(raw.getvalue()))
PY
  check_fails "$run's tarball holding $file twice" "holds $run/$file twice"
  summary_mutations
  link_mutations
}
summary_mutations() {  # the drawn run's summary made another shape, each named as its problem
  local edit kind
  for edit in "cut|not JSON" "empty|not JSON" "latin1|not UTF-8" "files|the summary's files is 5, not a list" \
              "name|file 1's name is .*, not text" "title|the summary's title is 5, not text or null"; do
    kind=${edit%%|*}
    fresh
    python3 - "$archive/$run.json" "$kind" <<'PY'
import json, sys
path, kind = sys.argv[1:]
raw = open(path, "rb").read()
d = json.loads(raw)
first = d["files"][0]
out = {"cut": lambda: raw[:1], "empty": lambda: b"", "latin1": lambda: raw.replace(b'"run": "', b'"run": "\xe9', 1),
       "files": lambda: json.dumps({**d, "files": 5}).encode(),
       "name": lambda: json.dumps({**d, "files": [{**first, "name": [first["name"]]}] + d["files"][1:]}).encode(),
       "title": lambda: json.dumps({**d, "title": 5}).encode()}[kind]()
open(path, "wb").write(out)
PY
    check_fails "$run's summary edited ($kind)" "docs/results/archive/$run.json: ${edit#*|}"
  done
}
link_mutations() {  # links under docs/results: each one problem, "is a link", never followed
  fresh && ln -s "$run.tar.xz" "$archive/linked-h200-2026-12-03-0000000.tar.xz"
  check_fails "a link to $run's tarball" "archive/linked-h200-2026-12-03-0000000.tar.xz is a link"
  [[ $(grep -c linked-h200 "$tmp/out.txt") == 1 ]] || { cat "$tmp/out.txt"; echo "FAIL: a link named more than once"; exit 1; }
  fresh && ln -s /etc "$archive/etcdir"
  check_fails "a link out of the repository in the archive" "archive/etcdir is a link"
  fresh && ln -s nowhere "$archive/dangling"
  check_fails "a dangling link in the archive" "archive/dangling is a link"
  ! grep -q "archive-run.*dangling" "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "FAIL: advice to pack a link"; exit 1; }
  fresh && ln -s /etc "$suite/peers/etc"
  check_fails "a link inside the suite's folder" "peers/etc is a link"
}
snapshot() { (cd "$tmp/tree/docs/results" && find . -printf '%p %m %y %l\n' | sort && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum; }
refused() {  # refused WHAT REASON PATH...: scripts/archive-run must fail, saying REASON, changing nothing
  local what=$1 reason=$2 before
  shift 2
  before=$(snapshot)
  if python3 "$tmp/tree/scripts/archive-run" "$@" >"$tmp/out.txt" 2>&1; then echo "FAIL: archive-run took $what"; exit 1; fi
  grep -q -- "$reason" "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "FAIL: archive-run $what: not for the reason '$reason'"; exit 1; }
  ! grep -q Traceback "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "FAIL: archive-run $what: a traceback"; exit 1; }
  [[ $(snapshot) == "$before" ]] || { echo "FAIL: archive-run $what changed docs/results"; exit 1; }
  echo "ok: archive-run refuses $what, changing nothing"
}
archive_run_refusals() {  # on the drawn run
  local results=$tmp/tree/docs/results spaced
  fresh
  refused "the archive itself" "is in docs/results/archive/, archived already" "$archive"
  refused "$run's summary and tarball" "is in docs/results/archive/" "$archive/$run.json" "$archive/$run.tar.xz"
  tar -xJf "$archive/$run.tar.xz" -C "$results" && rm "$archive/$run.tar.xz" "$archive/$run.json"
  spaced=${run/-/ }
  mv "$results/$run" "$results/$spaced"
  refused "'$spaced', named with a space" "is not a run's name: KIND-" "$results/$spaced"
  mv "$results/$spaced" "$results/$run"
  ln -s .. "$results/$run/up"
  refused "$run holding a link" "$run/up is a link" "$results/$run"
  rm "$results/$run/up"
  printf '# A r\xe9sum\xe9 of %s\n' "$run" >"$results/$run/README.md"
  refused "$run with a README not UTF-8" "$run/README.md is not UTF-8" "$results/$run"
}
fresh
# No git above it either: GIT_CEILING_DIRECTORIES stops the search at the copy.
export GIT_CEILING_DIRECTORIES=$tmp
(cd "$tmp/tree" && git rev-parse 2>/dev/null) && { echo "FAIL: the copy is inside a git tree"; exit 1; }
python3 "$tmp/tree/scripts/results" --check >"$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; echo "FAIL: no git, and the check failed"; exit 1; }
grep -q "no git history here" "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "FAIL: without git, the check did not say what it could not compare"; exit 1; }
suite=$(ls -d "$tmp"/tree/docs/results/suite-* | tail -1)
python3 - "$tmp/tree/docs/results/archive/order.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d.pop(sorted(d)[0]); json.dump(d, open(sys.argv[1], "w"))
PY
check_fails "an archived run without its commit time" "order.json or changes.json lacks"
# The stored files are read as what they are, or refused naming the file (#78: no bare load).
fresh
printf '{"0737a7d": 17' >"$tmp/tree/docs/results/archive/order.json"
check_fails "order.json cut short" "archive/order.json: not JSON"
fresh
python3 - "$tmp/tree/docs/results/archive/changes.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d[sorted(d)[0]]["code_commits"] = "86"; json.dump(d, open(sys.argv[1], "w"))
PY
check_fails "changes.json with a count as text" "changes.json: '[0-9a-f]*': its entry's code_commits is"
fresh
python3 - "$tmp/tree/docs/results/archive/order.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["HEAD"] = 1; json.dump(d, open(sys.argv[1], "w"))
PY
check_fails "order.json naming no commit" "order.json: 'HEAD': not a commit"
fresh
python3 -c "import re,sys; p=sys.argv[1]; s=open(p).read(); open(p,'w').write(re.sub(r'<!-- /?generated: suite-headline -->\n', '', s))" "$tmp/tree/README.md"
check_fails "README's block with its markers deleted" "appears 0 times"
fresh
python3 -c "
import sys; p=sys.argv[1]; s=open(p).read()
i=s.index('<!-- generated: suite-headline -->'); j=s.index('<!-- /generated: suite-headline -->')+36
open(p,'w').write(s+'\n'+s[i:j]+'\n')" "$tmp/tree/README.md"
check_fails "a copied block" "appears 2 times"
fresh
peers() {  # peers FIX_MEDIAN: every raw FFmpeg run set to 100 fps; the stored median kept or made to match
  python3 - "$suite/peers/runs/peers.json" "$1" <<'PY'
import json, statistics, sys
p, fix = sys.argv[1], sys.argv[2] == "1"
rows = json.load(open(p))
for r in rows:
    cell = r["ffmpeg-cuda"]
    for x in cell["runs"]:
        x["fps"], x["wall_s"] = 100.0, x["frames"] / 100.0
    if fix:
        cell["fps"] = cell["fps_best"] = statistics.median(x["fps"] for x in cell["runs"])
json.dump(rows, open(p, "w"))
PY
}
suite=$tmp/tree/docs/results/$(basename "$suite")
peers 0
check_fails "raw runs edited under their stored median" "is not the median of its runs"
fresh
peers 1
check_fails "raw runs and their median edited together" "docs/RESULTS.md (from the data)"
fresh
edit "archive/$(cd "$archive" && ls gpu-smoke-h200-*.tar.xz | tail -1 | sed 's/\.tar\.xz$//')" "cp '$suite/peers/runs/peers.json' copied.json"
check_fails "a file copied from another run into an archived one" "is byte for byte"
fresh
: >"$suite/peers/empty.log"
check_fails "an empty log" "is empty"
fresh
mkdir -p "$tmp/tree/docs/results/lost-h200-2026-12-03-0000000" && echo '{}' >"$tmp/tree/docs/results/lost-h200-2026-12-03-0000000/run.json"
check_fails "a run nothing reads" "lost-h200-2026-12-03-0000000: no page reads or names it"
fresh
mkdir -p "$tmp/tree/docs/results/lost-h200-2026-12-03-0000000" && echo '{}' >"$tmp/tree/docs/results/lost-h200-2026-12-03-0000000/run.json"
python3 "$tmp/tree/scripts/archive-run" "$tmp/tree/docs/results/lost-h200-2026-12-03-0000000" >/dev/null
check_fails "an archived run HISTORY does not list" "lacks 0000000"
fresh
mkdir -p "$archive/lost-h200-2026-12-03-0000000" && echo '{}' >"$archive/lost-h200-2026-12-03-0000000/run.json"
check_fails "a run moved into the archive unpacked" "lost-h200-2026-12-03-0000000 is not packed"
# A run's files say another commit or card than its folder's name (issue #82): two runs drawn
# at random from those whose folder holds commit.txt, and from those with gpu.txt.
pick() {  # pick FILE N [NAMED]: N run folders (relative to docs/results; an archived one as
          # archive/RUN, its summary listing RUN/FILE) holding FILE whose name holds NAMED too
  (cd "$src/docs/results" && { ls -d */"$1" 2>/dev/null | grep -v '^archive/' | xargs -n1 dirname
    python3 -c "import glob, json, os
for p in sorted(glob.glob('archive/*.json')):
    d = json.load(open(p))
    if isinstance(d, dict) and any(f['name'] == d['run'] + '/$1' for f in d.get('files', [])):
        print('archive/' + d['run'])"; } |
    grep -E -- '-[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9a-f]{7}' | grep -E -- "${3:-.}" |
    python3 -c "import random,sys; r=sys.stdin.read().split(); random.seed($seed); print(*random.sample(r, min($2, len(r))))")
}
for run in $(pick commit.txt 2) $(pick commit.txt 1 '^archive/'); do
  fresh
  edit "$run" "echo 0123456789abcdef0123456789abcdef01234567 >commit.txt"
  check_fails "$run's commit.txt naming another commit" "commit.txt names 0123456789ab"
done
fresh
edit "$run" "printf '\\xff\\xfe\\n' >commit.txt"
check_fails "$run's commit.txt not UTF-8" "commit.txt names"
for run in $(pick gpu.txt 2 '-h[12]00-') $(pick gpu.txt 1 '^archive/.*-h[12]00-'); do
  fresh
  card=$(basename "$run" | grep -oE -- '-h[12]00-' | tr -d - | tr a-z A-Z)
  other=$([[ $card == H100 ]] && echo H200 || echo H100)
  edit "$run" "echo 'NVIDIA $other 80GB HBM3, 580.159.04, 81559 MiB' >gpu.txt"
  check_fails "$run's gpu.txt naming the other card" "gpu.txt names no $card"
done
fresh
run=$(pick commit.txt 1 '^archive/')  # (a run a page reads stops the generator first, at the file)
edit "$run" "find . -type f ! -name README.md -delete"
check_fails "$run holding only its README" "holds no data, only a README"
draw
archive_mutations
archive_run_refusals
echo "ok: without git the check passes; every mutation fails it"
