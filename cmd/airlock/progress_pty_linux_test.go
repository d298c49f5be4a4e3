package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// openPTY opens a pseudo-terminal pair of cols×rows.
func openPTY(t *testing.T, cols, rows int) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	fd := int(m.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlock pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("pseudo-terminal number: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("open pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)}); err != nil {
		t.Logf("window size: %v", err)
	}
	return m, s
}

var csiRE = regexp.MustCompile(`^\x1b\[([0-9;?]*)([@-~])`)

// screen renders what a terminal shows for out: carriage returns, line feeds,
// and the CSI sequences progress bars use (erase in line, cursor up, column).
func screen(out []byte) []string {
	lines := [][]rune{{}}
	row, col := 0, 0
	put := func(r rune) {
		for len(lines[row]) <= col {
			lines[row] = append(lines[row], ' ')
		}
		lines[row][col] = r
		col++
	}
	s := string(out)
	for i := 0; i < len(s); {
		if m := csiRE.FindStringSubmatch(s[i:]); m != nil {
			i += len(m[0])
			n, _ := strconv.Atoi(strings.TrimPrefix(m[1], "?"))
			switch m[2] {
			case "K":
				switch n {
				case 0:
					if col < len(lines[row]) {
						lines[row] = lines[row][:col]
					}
				case 1, 2:
					lines[row] = []rune{}
				}
			case "A":
				row = max(row-max(n, 1), 0)
			case "G":
				col = max(n-1, 0)
			}
			continue
		}
		r := []rune(s[i:])[0]
		i += len(string(r))
		switch r {
		case '\r':
			col = 0
		case '\n':
			row++
			col = 0
			if row == len(lines) {
				lines = append(lines, []rune{})
			}
		case '\x1b':
		default:
			if r >= ' ' {
				put(r)
			}
		}
	}
	out2 := make([]string, len(lines))
	for i, l := range lines {
		out2[i] = strings.TrimRight(string(l), " ")
	}
	return out2
}

// TestProgressOnTerminal runs airlock mirror under a pseudo-terminal and checks
// what a person sees: each stage announced once, one bar for the copy with bytes,
// rate and time left that ends at 100% of the total known before the copy, and
// the summary.
func TestProgressOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a registry round trip")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, dst := registrytest.Start(t), registrytest.Start(t)
	// Blob downloads take a tenth of a second, as over a real network, so that a
	// person (and this test) sees the bar move.
	target, _ := url.Parse("http://" + src.Host())
	rp := httputil.NewSingleHostReverseProxy(target)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			time.Sleep(100 * time.Millisecond)
		}
		rp.ServeHTTP(w, r)
	}))
	defer slow.Close()
	srcHost := strings.TrimPrefix(slow.URL, "http://")
	var cfg strings.Builder
	cfg.WriteString("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n")
	const images = 8
	for i := range images {
		ref := fmt.Sprintf("/tools/app%d:1.0", i)
		imagetest.MustPush(t, src.Host()+ref, fakeimage.Spec{Seed: uint64(100 + i), Layers: 3, LayerSize: 256 << 10})
		fmt.Fprintf(&cfg, "  - name: %s%s\n", srcHost, ref)
	}
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "isc.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	master, slave := openPTY(t, 120, 40)
	defer master.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "mirror", "-c", cfgPath, "--workspace", "file://"+filepath.Join(dir, "ws"),
		"docker://"+dst.Host()+"/mirror", "--src-tls-verify=false", "--dest-tls-verify=false", "--parallel-images", "2")
	cmd.Env = append(os.Environ(), "AIRLOCK_TEST_RUN_MAIN=1", "TERM=xterm")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	var raw bytes.Buffer
	readDone := make(chan struct{})
	go func() {
		io.Copy(&raw, master) // ends with EIO when the last slave closes
		close(readDone)
	}()
	werr := cmd.Wait()
	select {
	case <-readDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal output did not end")
	}
	lines := screen(raw.Bytes())
	shown := strings.Join(lines, "\n")
	t.Logf("the terminal shows:\n%s", shown)
	if werr != nil {
		t.Fatalf("airlock mirror: %v", werr)
	}
	for _, title := range []string{"resolving images to digests", "reading manifests to size the copy", "copying images", "writing cluster resources"} {
		if n := strings.Count(shown, "airlock: "+title+"\n"); n != 1 {
			t.Errorf("stage %q announced %d times", title, n)
		}
	}
	if strings.Contains(shown, "level=INFO") {
		t.Errorf("log lines on a terminal duplicate the stages")
	}
	// Counting stages (planning, measuring) get a bar of images only when they
	// last; the copy's bar counts bytes.
	var bars []string
	for _, l := range lines {
		if strings.Contains(l, "images ") && strings.Contains(l, "%") && strings.Contains(l, "MiB") {
			bars = append(bars, l)
		}
	}
	if len(bars) != 1 {
		t.Fatalf("want one copy bar on screen, got %d:\n%s", len(bars), strings.Join(bars, "\n"))
	}
	// 8 images × 3 layers × 256 KiB plus configs: the total is known up front.
	barRE := regexp.MustCompile(`images 8/8 +100% \|█+\| \(6\.0/6\.0 MiB, [0-9.]+ [KMG]iB/s\)`)
	if !barRE.MatchString(bars[0]) {
		t.Errorf("final bar %q does not match %s", bars[0], barRE)
	}
	// While copying, the bar showed the rate and the time elapsed against the same total.
	midRE := regexp.MustCompile(`images [0-9]/8(, about [0-9hms]+ left)? +[1-9][0-9]?% \|[█ ]+\| \([0-9.]+/6\.0 MiB, [0-9.]+ [KMG]iB/s\) \[[0-9a-z]+\]`)
	if !midRE.Match(raw.Bytes()) {
		t.Errorf("no frame showed progress with rate and elapsed time against the total:\n%q", raw.String())
	}
	checkFrames(t, raw.Bytes(), 8)
	if !strings.Contains(shown, "mirror-to-mirror summary") || !strings.Contains(shown, "images:    8 planned: 8 copied") {
		t.Errorf("summary missing")
	}
}

var (
	frameRE   = regexp.MustCompile(`images (\d+)/(\d+)(?: \(\d+ failed\))?(?:, catalogs \d+/\d+(?: \(\d+ failed\))?)?(?:, about ([0-9hms]+) left)? +(\d+)% \|[█ ]*\| \( ?([0-9.]+) ?([KMG]i)?B?/([0-9.]+) ([KMG]i)?B(?:, [^)]*)?\) \[(\d+)s\]`)
	oldEtaRE  = regexp.MustCompile(`\[[0-9hms.]+:[0-9hms.]+\]`)
	unitBytes = map[string]float64{"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
)

// checkFrames checks every frame the copy's bar drew, from the first: the
// images start at 0 of the images planned, the percentage is never above the
// bytes the frame shows as done, and no time left is shown in the first
// seconds (etaAfter), nor a time left of 0s.
func checkFrames(t *testing.T, raw []byte, images int) {
	t.Helper()
	var frames []string
	for _, seg := range regexp.MustCompile(`[\r\n]`).Split(string(raw), -1) {
		seg = regexp.MustCompile(`\x1b\[[0-9;?]*[@-~]`).ReplaceAllString(seg, "")
		if strings.Contains(seg, "|") && strings.Contains(seg, "images ") {
			frames = append(frames, strings.TrimSpace(seg))
		}
	}
	var copyFrames []string
	for _, f := range frames {
		if oldEtaRE.MatchString(f) {
			t.Errorf("frame %q shows progressbar's own guess of the time left", f)
		}
		if strings.Contains(f, "B/") { // the copy's bar, in bytes
			copyFrames = append(copyFrames, f)
		}
	}
	if len(copyFrames) == 0 {
		t.Fatalf("no frame of the copy's bar in:\n%s", strings.Join(frames, "\n"))
	}
	if m := frameRE.FindStringSubmatch(copyFrames[0]); m == nil || m[1] != "0" || m[2] != strconv.Itoa(images) {
		t.Errorf("first frame of the copy %q: want images 0/%d", copyFrames[0], images)
	}
	for _, f := range copyFrames {
		m := frameRE.FindStringSubmatch(f)
		if m == nil {
			t.Errorf("frame %q does not match %s", f, frameRE)
			continue
		}
		pct, _ := strconv.Atoi(m[4])
		done, _ := strconv.ParseFloat(m[5], 64)
		total, _ := strconv.ParseFloat(m[7], 64)
		doneUnit := m[6]
		if doneUnit == "" && !strings.Contains(f, " B/") {
			doneUnit = m[8] // "5.7/7.2 MiB": both in the total's unit
		}
		done, total = done*unitBytes[doneUnit], total*unitBytes[m[8]]
		// Sizes are rounded to one decimal: allow that much.
		if float64(pct) > (done+0.05*unitBytes[doneUnit])/total*100+1 {
			t.Errorf("frame %q: %d%% is above the bytes it shows done", f, pct)
		}
		elapsed, _ := strconv.Atoi(m[9])
		if m[3] != "" && (time.Duration(elapsed)*time.Second < etaAfter-time.Second || m[3] == "0s") {
			t.Errorf("frame %q: time left %s shown after %ds", f, m[3], elapsed)
		}
	}
}
