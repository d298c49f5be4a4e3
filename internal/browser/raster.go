package browser

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// ErrNoChromium is returned (wrapped) by SVGToPNG when no chromium binary is
// found.
var ErrNoChromium = errors.New("no chromium found")

// maxRasterSide bounds each side of a rasterized picture, in pixels.
const maxRasterSide = 16384

var svgSize = regexp.MustCompile(`<svg[^>]*?\swidth="([0-9.]+)(pt|px)?"[^>]*?\sheight="([0-9.]+)(pt|px)?"`)

// SVGToPNG draws an SVG document (as Graphviz writes it: width and height in
// points or pixels on the root element) into a PNG of its own size, with
// headless Chromium (bin; Find when empty), white behind it.
func SVGToPNG(ctx context.Context, bin string, svg []byte) ([]byte, error) {
	if bin == "" {
		if bin = Find(); bin == "" {
			return nil, fmt.Errorf("%w: PNG pictures are drawn by a headless Chromium (apt-get install chromium, or set $AIRLOCK_CHROMIUM); write .svg instead, which every browser shows", ErrNoChromium)
		}
	}
	m := svgSize.FindSubmatch(svg)
	if m == nil {
		return nil, errors.New("the SVG has no width and height on its root element")
	}
	w, h := pixels(string(m[1]), string(m[2])), pixels(string(m[3]), string(m[4]))
	if w <= 0 || h <= 0 || w > maxRasterSide || h > maxRasterSide {
		return nil, fmt.Errorf("the picture is %d×%d pixels: more than %d on a side; write .svg instead, or draw one channel (--channel)", w, h, maxRasterSide)
	}
	dir, err := os.MkdirTemp("", "airlock-png-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in, out := filepath.Join(dir, "picture.svg"), filepath.Join(dir, "picture.png")
	if err := os.WriteFile(in, svg, 0o644); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--no-default-browser-check", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--default-background-color=ffffffff", "--force-device-scale-factor=1",
		"--window-size="+strconv.Itoa(w)+","+strconv.Itoa(h), "--screenshot="+out, fileURL(in))
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s could not draw the picture: %w: %s", bin, err, lastLines(msg))
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("%s wrote no picture: %w", bin, err)
	}
	return b, nil
}

// pixels converts a CSS length in pt (Graphviz's unit) or px to whole pixels.
func pixels(v, unit string) int {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return -1
	}
	if unit == "pt" {
		f = f * 96 / 72
	}
	return int(math.Ceil(f))
}

func lastLines(b []byte) string {
	if len(b) > 400 {
		b = b[len(b)-400:]
	}
	return string(b)
}
