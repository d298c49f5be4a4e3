#!/usr/bin/env bash
# Renders the Mermaid pictures of a Markdown page to PNG in headless Chromium:
# the Nth ```mermaid block of PAGE becomes the Nth PNG named.
#
#   scripts/render-mermaid.sh docs/architecture.md \
#     docs/images/architecture.png docs/images/sources.png docs/images/stages.png
#
# Needs the Debian package chromium, node and npm; Mermaid is installed from
# npm into a temporary folder (or taken from $MERMAID_DIR, a folder holding
# node_modules/mermaid). A diagram Mermaid refuses fails the script. SCALE (1
# unless set) is the device scale factor: 1 keeps the PNGs a few hundred KB.
set -euo pipefail
page=$1; shift
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mm=${MERMAID_DIR:-$tmp/npm}
if [ ! -f "$mm/node_modules/mermaid/dist/mermaid.min.js" ]; then
  mkdir -p "$mm" && npm install --prefix "$mm" --no-audit --no-fund --silent mermaid >/dev/null
fi
cp "$mm/node_modules/mermaid/dist/mermaid.min.js" "$tmp/"
# One HTML page per block: it renders the diagram and writes its size, or
# Mermaid's error, into the body's data-size attribute.
node - "$page" "$tmp" "$#" <<'EOF'
const fs = require('fs');
const [page, dir, want] = process.argv.slice(2);
const blocks = [...fs.readFileSync(page, 'utf8').matchAll(/^```mermaid\n([\s\S]*?)^```$/gm)].map(m => m[1]);
if (blocks.length != +want) { console.error(`${page} has ${blocks.length} mermaid blocks, ${want} PNGs named`); process.exit(1); }
blocks.forEach((code, i) => fs.writeFileSync(`${dir}/${i}.html`, `<!doctype html><meta charset="utf-8">
<body style="margin:0;background:#fff"><div id="out" style="display:inline-block;padding:16px"></div>
<script src="mermaid.min.js"></script><script>
mermaid.initialize({startOnLoad: false, theme: 'default', flowchart: {useMaxWidth: false}});
mermaid.render('d', ${JSON.stringify(code)}).then(({svg}) => {
  out.innerHTML = svg; const r = out.getBoundingClientRect();
  document.body.dataset.size = Math.ceil(r.width) + ',' + Math.ceil(r.height);
}, e => { document.body.dataset.size = 'error: ' + e.message; });
</script>`));
EOF
chrome() { nice -n 10 chromium --headless --disable-gpu --no-sandbox --hide-scrollbars --virtual-time-budget=20000 "$@" 2>/dev/null; }
i=0
for png in "$@"; do
  size=$(chrome --dump-dom "file://$tmp/$i.html" | sed -n 's/.*data-size="\([^"]*\)".*/\1/p')
  case $size in [0-9]*,[0-9]*) ;; *) echo "$page, block $((i + 1)): ${size:-no rendering}" >&2; exit 1 ;; esac
  chrome --force-device-scale-factor=${SCALE:-1} --window-size="$size" --screenshot="$png" "file://$tmp/$i.html" >/dev/null
  echo "$png: ${size/,/x} CSS px"
  i=$((i + 1))
done
