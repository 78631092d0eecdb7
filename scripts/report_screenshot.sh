#!/usr/bin/env bash
# The report page of a results file, rendered by headless Chromium into a PNG (no GPU needed):
#   bash scripts/report_screenshot.sh RESULTS.json OUT.png [WIDTHxHEIGHT] [ANCHOR]
# The docs' pictures:
#   bash scripts/report_screenshot.sh tests/fixtures/results/h100_course_a.json.gz docs/report-course-h100.png 1400x3300
#   bash scripts/report_screenshot.sh tests/fixtures/results/h200_matmul_with.json docs/report-with-ncu.png 1400x4000 \
#     row-matmul-warptile-2048x2048x2048
# ANCHOR: an id on the page to open (a row's details, "row-FAMILY-VARIANT-SIZE") and scroll to.
# The page's blank bottom is cut off where Pillow is importable. PYTHON picks the interpreter
# (default python3). Needs chromium (Debian: apt-get install -y chromium).
set -euo pipefail
usage="usage: report_screenshot.sh RESULTS.json OUT.png [WIDTHxHEIGHT] [ANCHOR]"
results=${1:?$usage}
out=${2:?$usage}
size=${3:-1400x2400}
anchor=${4:-}
python=${PYTHON:-python3}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome) || {
  echo "error: no chromium found (apt-get install -y chromium)" >&2; exit 3; }
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
page="$workdir/report.html"
"$python" -m gpuprof report "$results" --html "$page" --force > /dev/null
url="file://$page"
if [ -n "$anchor" ]; then
  # Open the row's details and show the page from its top: the anchor's details are part of the picture.
  "$python" - "$page" "$anchor" <<'EOF'
import pathlib, sys
page, anchor = pathlib.Path(sys.argv[1]), sys.argv[2]
text = page.read_text()
text = text.replace(f'<details class="row" id="{anchor}">', f'<details class="row" id="{anchor}" open>', 1)
page.write_text(text)
EOF
fi
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size="${size/x/,}" \
  --screenshot="$out" "$url" 2> /dev/null
"$python" - "$out" <<'EOF' || true
import sys
try:
    from PIL import Image
except ImportError:
    sys.exit(0)
path = sys.argv[1]
image = Image.open(path).convert("RGB")
background = image.getpixel((image.width - 1, image.height - 1))
bottom = image.height
pixels = image.load()
while bottom > 1 and all(pixels[x, bottom - 1] == background for x in range(0, image.width, 4)):
    bottom -= 1
picture = image.crop((0, 0, image.width, min(image.height, bottom + 24)))
picture.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)  # a page has few colours
EOF
echo "wrote $out"
