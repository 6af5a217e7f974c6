#!/usr/bin/env bash
# scripts/results --check on a tree without git history (a copy of the working
# tree's scripts/ and docs/ and README, no .git): it must pass as on the clone,
# since the runs' order comes from docs/results/order.json; and it must fail
# once a run's commit time is missing from order.json (issue #42).
set -euo pipefail
src=${1:?usage: results_without_git_test.sh SOURCE_DIR}
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
grep -q "order.json lacks the commit time" "$tmp/out.txt" && echo "ok: without git the check passes, and a missing order entry fails it"
