#!/usr/bin/env bash
# Render a generated report with headless Chromium: a full-page PNG to look at, and a DOM dump
# checked for every section the report should hold. Installs nothing: needs /usr/bin/chromium
# (Debian package `chromium`).
#
#   scripts/report-screenshot.sh REPORT.html [OUT.png]
#
# Every part (one per results file) must have its comparison table and its figure sections, and
# the page must hold at least one figure; the section ids are `<part>--<section>` (see html.rs).
set -euo pipefail
report=${1:?usage: $0 REPORT.html [OUT.png]}
out=${2:-${report%.html}.png}
chromium=${CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || { echo "no $chromium: apt-get install chromium" >&2; exit 2; }
url="file://$(realpath "$report")"
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --disable-dev-shm-usage)

dom=$(mktemp)
trap 'rm -f "$dom"' EXIT
"$chromium" "${flags[@]}" --dump-dom "$url" >"$dom" 2>/dev/null

missing=0
parts=$(grep -o '<section class="part" id="[^"]*"' "$dom" | sed 's/.*id="//; s/"$//')
[ -n "$parts" ] || { echo "no part in the rendered page" >&2; exit 1; }
for part in $parts; do
  case $part in
    *-vs-*) wanted=(simulated-versus-measured) ;;
    *-live*) wanted=(comparison read-latency-tail percentiles-versus-the-swept-parameter
                     stretch-distribution load-per-server-over-time small-reads-stuck-behind-large-ones
                     distance-from-the-lower-bound per-second) ;;
    *) wanted=(comparison read-latency-tail percentiles-versus-the-swept-parameter
               stretch-distribution load-per-server-over-time small-reads-stuck-behind-large-ones distance-from-the-lower-bound) ;;
  esac
  for section in "${wanted[@]}"; do
    if ! grep -q "id=\"$part--$section\"" "$dom"; then
      echo "missing section $part--$section" >&2
      missing=1
    fi
  done
done
figures=$(grep -c '<figure id="fig-' "$dom" || true)
[ "$figures" -gt 0 ] || { echo "no figure in the rendered page" >&2; missing=1; }

# tall enough for a long page; Chromium crops to the window, not the document
height=$(( 1200 + figures * 220 ))
"$chromium" "${flags[@]}" --window-size=1400,"$height" --screenshot="$(realpath -m "$out")" "$url" 2>/dev/null
echo "$(echo "$parts" | wc -w) parts, $figures figures, screenshot $out"
exit $missing
