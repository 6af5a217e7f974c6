#!/usr/bin/env bash
# scripts/results --check on a tree without git history (a copy of the working tree's scripts/,
# docs/ and README, no .git): it must pass as on the clone, since a suite's order is in its own
# files and the archive's in archive/order.json and changes.json. Then each mutation must fail it
# (issue #42): an archived run's entry missing from order.json; README's generated block with its
# markers deleted (its text then passes for typed) or copied; the suite's raw runs edited under
# their stored median; the raw runs and the median edited together (the page then differs); a file
# copied from one run's folder into another's; an empty log; a run folder nothing reads or names;
# a run's commit.txt or gpu.txt saying another commit or card than its folder's name; a run's
# folder holding only its README.
set -euo pipefail
src=${1:?usage: results_mutations_test.sh SOURCE_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fresh() { rm -rf "$tmp/tree" && mkdir -p "$tmp/tree" && cp -r "$src/scripts" "$src/docs" "$src/README.md" "$tmp/tree/"; }
check_fails() {  # check_fails WHAT REASON: the check must fail, saying REASON
  if python3 "$tmp/tree/scripts/results" --check >"$tmp/out.txt" 2>&1; then echo "FAIL: $1 passed the check"; exit 1; fi
  grep -q -- "$2" "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "FAIL: $1: not for the reason '$2'"; exit 1; }
  echo "ok: $1 fails the check"
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
cp "$suite/peers/runs/peers.json" "$(ls -d "$tmp"/tree/docs/results/archive/gpu-smoke-h200-* | tail -1)/copied.json"
check_fails "a file copied from another run" "is byte for byte"
fresh
: >"$suite/peers/empty.log"
check_fails "an empty log" "is empty"
fresh
mkdir -p "$tmp/tree/docs/results/lost-h200-2026-12-03-0000000" && echo '{}' >"$tmp/tree/docs/results/lost-h200-2026-12-03-0000000/run.json"
check_fails "a run nothing reads" "lost-h200-2026-12-03-0000000: no page reads or names it"
fresh
mkdir -p "$tmp/tree/docs/results/archive/lost-h200-2026-12-03-0000000" && echo '{}' >"$tmp/tree/docs/results/archive/lost-h200-2026-12-03-0000000/run.json"
check_fails "an archived run HISTORY does not list" "lacks 0000000"
# A run's files say another commit or card than its folder's name (issue #82): two runs drawn
# at random (seed printed) from those whose folder holds commit.txt, and from those with gpu.txt.
seed=${VPIPE_RESULTS_SEED:-$RANDOM}
echo "results mutations: seed $seed (VPIPE_RESULTS_SEED)"
pick() {  # pick FILE N [NAMED]: N run folders (relative to docs/results) holding FILE whose
          # name holds NAMED too, drawn by the seed
  (cd "$src/docs/results" && ls -d */"$1" archive/*/"$1" 2>/dev/null | xargs -n1 dirname |
    grep -E -- '-[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9a-f]{7}' | grep -E -- "${3:-.}" |
    python3 -c "import random,sys; r=sys.stdin.read().split(); random.seed($seed); print(*random.sample(r, min($2, len(r))))")
}
for run in $(pick commit.txt 2); do
  fresh
  echo 0123456789abcdef0123456789abcdef01234567 >"$tmp/tree/docs/results/$run/commit.txt"
  check_fails "$run's commit.txt naming another commit" "commit.txt names 0123456789ab"
done
for run in $(pick gpu.txt 2 '-h[12]00-'); do
  fresh
  card=$(basename "$run" | grep -oE -- '-h[12]00-' | tr -d - | tr a-z A-Z)
  other=$([[ $card == H100 ]] && echo H200 || echo H100)
  echo "NVIDIA $other 80GB HBM3, 580.159.04, 81559 MiB" >"$tmp/tree/docs/results/$run/gpu.txt"
  check_fails "$run's gpu.txt naming the other card" "gpu.txt names no $card"
done
fresh
run=$(pick commit.txt 1 '^archive/')  # (a run a page reads stops the generator first, at the file)
find "$tmp/tree/docs/results/$run" -type f ! -name README.md -delete
check_fails "$run holding only its README" "holds no data, only a README"
echo "ok: without git the check passes; every mutation fails it"
