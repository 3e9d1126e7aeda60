#!/usr/bin/env bash
# The report screenshot of the README and the docs (docs/img/report.png): a real
# `kbench report` of a small run on this machine (the perf suite on the smoke
# catalog, every case verified before it is timed) with what a default install has
# (`pip install kbench` on x86: the scalar backend, no peer library or plugin: hence
# --backend scalar, whatever else this environment has installed), rendered by
# headless chromium. Its caption (README, docs/index.md) is generated from the
# page's questions and first sections (docs/gen/kbdocs.py report_caption) and
# suites/test_report_evidence.py checks a rendered page against it.
# Run it again to refresh the picture; it writes nothing else into the repository.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
CHROMIUM="${CHROMIUM:-$(command -v chromium || command -v chromium-browser)}"
out="$(realpath -m "${1:-$REPO/docs/img/report.png}")"
mkdir -p "$(dirname "$out")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

kbench run --suite perf --shapes smoke --backend scalar --rounds 4 --max-time 0.02 --no-history \
  --out "$tmp/smoke-host" > "$tmp/run.log"
kbench report "$tmp/smoke-host" --out "$tmp/report" > /dev/null
html="$(find "$tmp/report" -maxdepth 1 -name '*.html' | head -n 1)"
"$CHROMIUM" --headless=new --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
  --user-data-dir="$tmp/profile" --virtual-time-budget=5000 --window-size=1280,1000 \
  --screenshot="$out" "file://$html" 2> "$tmp/chromium.log"
test -s "$out" || { cat "$tmp/chromium.log"; echo "no screenshot written: $out"; exit 1; }
echo "$out"
