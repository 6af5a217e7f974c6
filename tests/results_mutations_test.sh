#!/usr/bin/env bash
# scripts/results --check on a tree without git history (a copy of the working
# tree's scripts/ and docs/ and README, no .git): it must pass as on the clone,
# since the runs' order comes from docs/results/order.json. Then each mutation
# must fail it (issue #42): a run's commit time missing from order.json, a
# generated block's markers deleted (its text then passes for typed), a block
# copied twice, raw runs edited under their stored median, a file copied from
# one run's folder into another's, an empty log, a run folder nothing reads or names.
set -euo pipefail
src=${1:?usage: results_mutations_test.sh SOURCE_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tree"
cp -r "$src/scripts" "$src/docs" "$src/README.md" "$tmp/tree/"
# No git above it either: GIT_CEILING_DIRECTORIES stops the search at the copy.
export GIT_CEILING_DIRECTORIES=$tmp
(cd "$tmp/tree" && git rev-parse 2>/dev/null) && { echo "FAIL: the copy is inside a git tree"; exit 1; }
python3 "$tmp/tree/scripts/results" --check >"$tmp/out.txt" 2>&1 || { cat "$tmp/out.txt"; echo "FAIL: no git, and the check failed"; exit 1; }
python3 - "$tmp/tree/docs/results/order.json" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
d.pop(sorted(d)[0])
json.dump(d, open(p, "w"))
PY
if python3 "$tmp/tree/scripts/results" --check >"$tmp/out.txt" 2>&1; then
  echo "FAIL: a run without its commit time passed the check"; exit 1
fi
grep -q "order.json lacks the commit time" "$tmp/out.txt" || { cat "$tmp/out.txt"; exit 1; }
cp "$src/docs/results/order.json" "$tmp/tree/docs/results/order.json"
cp "$tmp/tree/README.md" "$tmp/README.orig"
mutate() {  # mutate NAME PYTHON: README.md edited by PYTHON (s: its text), the check must fail
  cp "$tmp/README.orig" "$tmp/tree/README.md"
  python3 -c "import sys; p=sys.argv[1]; s=open(p).read(); $2; open(p,'w').write(s)" "$tmp/tree/README.md"
  if python3 "$tmp/tree/scripts/results" --check >"$tmp/out.txt" 2>&1; then
    echo "FAIL: $1 passed the check"; exit 1
  fi
  grep -q "appears" "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "FAIL: $1: not the reason"; exit 1; }
}
mutate "deleted markers" "import re; s=re.sub(r'<!-- /?generated: readme-soak -->\\n', '', s)"
mutate "a copied block" "i=s.index('<!-- generated: readme-soak -->'); j=s.index('<!-- /generated: readme-soak -->')+33; s=s+'\\n'+s[i:j]+'\\n'"
cp "$tmp/README.orig" "$tmp/tree/README.md"
# Every raw FFmpeg run set to 100 fps, the stored medians left as they were.
python3 - "$tmp/tree/docs/results" <<'PY'
import glob, json, sys
for p in glob.glob(sys.argv[1] + "/peers-fair-*/**/peers.json", recursive=True):
    rows = json.load(open(p))
    for r in rows:
        for x in r.get("ffmpeg-cuda", {}).get("runs", []):
            x["fps"], x["wall_s"] = 100.0, x["frames"] / 100.0
    json.dump(rows, open(p, "w"))
PY
if python3 "$tmp/tree/scripts/results" --check >"$tmp/out.txt" 2>&1; then
  echo "FAIL: edited raw runs passed the check"; exit 1
fi
grep -q "is not the median of its runs" "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "FAIL: raw runs: not the reason"; exit 1; }
rm -rf "$tmp/tree/docs" && cp -r "$src/docs" "$tmp/tree/"
# One call's file copied into another run's folder, and an empty log.
soak=$(ls -d "$tmp"/tree/docs/results/soak-parallel-h200-* | tail -1)
cp "$soak/roi.md" "$(ls -d "$tmp"/tree/docs/results/gpu-smoke-h200-* | tail -1)/copied.md"
if python3 "$tmp/tree/scripts/results" --check >"$tmp/out.txt" 2>&1; then
  echo "FAIL: a file copied from another run passed the check"; exit 1
fi
grep -q "is byte for byte" "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "FAIL: copy: not the reason"; exit 1; }
rm -rf "$tmp/tree/docs" && cp -r "$src/docs" "$tmp/tree/"
: >"$soak/empty.log"
if python3 "$tmp/tree/scripts/results" --check >"$tmp/out.txt" 2>&1; then
  echo "FAIL: an empty log passed the check"; exit 1
fi
grep -q "is empty" "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "FAIL: empty: not the reason"; exit 1; }
rm -rf "$tmp/tree/docs" && cp -r "$src/docs" "$tmp/tree/"
# A run folder that nothing reads or names (published text resting on no data, or data
# nobody looks at).
mkdir -p "$tmp/tree/docs/results/lost-h200-2026-12-03-0000000" && echo '{}' >"$tmp/tree/docs/results/lost-h200-2026-12-03-0000000/run.json"
if python3 "$tmp/tree/scripts/results" --check >"$tmp/out.txt" 2>&1; then
  echo "FAIL: a run nothing reads passed the check"; exit 1
fi
grep -q "lost-h200-2026-12-03-0000000: no published text reads or names it" "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "FAIL: unread: not the reason"; exit 1; }
echo "ok: without git the check passes; a missing order entry, deleted markers, a copied block, edited raw runs, a file copied between runs, an empty log and a run nothing reads fail it"
