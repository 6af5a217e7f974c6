#!/usr/bin/env bash
# scripts/results --check must catch a one-figure edit: a copy of RESULTS.md
# passes as committed, then fails once one digit inside a generated block
# changes. (Issue #19: a figure nobody can type by hand.)
set -euo pipefail
src=${1:?usage: results_check_test.sh SOURCE_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$src/docs/RESULTS.md" "$tmp/RESULTS.md"
"$src/scripts/results" --check --file "$tmp/RESULTS.md" >/dev/null || { echo "FAIL: the committed RESULTS.md does not match its data"; exit 1; }
# The first digit after the first generated marker, changed by one.
python3 - "$tmp/RESULTS.md" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p, encoding="utf-8").read()
start = s.index("<!-- generated: ")
start = s.index("|", s.index("-->", start))  # inside the table
m = re.compile(r"\d").search(s, start)
s = s[:m.start()] + str((int(m.group()) + 1) % 10) + s[m.end():]
open(p, "w", encoding="utf-8").write(s)
PY
if "$src/scripts/results" --check --file "$tmp/RESULTS.md" >"$tmp/diff.txt" 2>&1; then
  echo "FAIL: an edited figure passed the check"; exit 1
fi
grep -q "^-" "$tmp/diff.txt" && echo "ok: the edit was caught:" && grep -m2 "^[-+]|" "$tmp/diff.txt"
