#!/usr/bin/env bash
# The report page of a results file, rendered by headless Chromium into a PNG (no GPU needed):
#   bash scripts/report_screenshot.sh tests/fixtures/results/h100_course.json docs/report-course-h100.png
# Needs chromium (Debian: apt-get install -y chromium).
set -euo pipefail
results=${1:?usage: report_screenshot.sh RESULTS.json OUT.png [WIDTHxHEIGHT]}
out=${2:?usage: report_screenshot.sh RESULTS.json OUT.png [WIDTHxHEIGHT]}
size=${3:-1400x2400}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome) || {
  echo "error: no chromium found (apt-get install -y chromium)" >&2; exit 3; }
page=$(mktemp --suffix=.html)
trap 'rm -f "$page"' EXIT
python3 -m gpuprof report "$results" --html "$page" --force > /dev/null
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="${size/x/,}" \
  --screenshot="$out" "file://$page" 2> /dev/null
echo "wrote $out"
