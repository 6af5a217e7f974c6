#!/usr/bin/env bash
# scripts/results --check must catch a one-figure edit (issue #19, #42): a copy of the tree passes
# as committed, then fails once one digit changes in a table of docs/RESULTS.md, of docs/HISTORY.md
# or of README.md's generated headline.
set -euo pipefail
src=${1:?usage: results_check_test.sh SOURCE_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/scripts" "$src/docs" "$src/README.md" "$tmp/"
python3 "$tmp/scripts/results" --check >/dev/null 2>&1 || { echo "FAIL: the committed pages do not match their data"; exit 1; }
for page in docs/RESULTS.md docs/HISTORY.md README.md; do
  cp "$tmp/$page" "$tmp/page.orig"
  # the first figure (a cell that starts with a digit) after the page's first generated text, changed by one
  python3 - "$tmp/$page" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p, encoding="utf-8").read()
start = s.index("generated")
start = s.index("\n|", s.index("|---", start))
m = re.compile(r"\| (\d)").search(s, start)
s = s[:m.start(1)] + str((int(m.group(1)) + 1) % 10) + s[m.end(1):]
open(p, "w", encoding="utf-8").write(s)
PY
  if python3 "$tmp/scripts/results" --check >"$tmp/diff.txt" 2>&1; then
    echo "FAIL: an edited figure in $page passed the check"; exit 1
  fi
  grep -q "^-|" "$tmp/diff.txt" || { cat "$tmp/diff.txt"; echo "FAIL: $page: no diff shown"; exit 1; }
  echo "ok: an edit in $page was caught: $(grep -m1 '^-|' "$tmp/diff.txt" | cut -c1-120)"
  cp "$tmp/page.orig" "$tmp/$page"
done
