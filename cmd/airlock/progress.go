package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/airlock-mirror/airlock/internal/humanize"
	"github.com/airlock-mirror/airlock/pipeline"
)

// logEvery is the least time between two progress lines off a terminal.
const logEvery = 5 * time.Second

// stageTitles are how the stages of a run are announced.
var stageTitles = map[string]string{
	"preflight":         "checking the registries and credentials",
	"catalogs":          "fetching and pruning catalogs",
	"plan":              "resolving images to digests",
	"measure":           "reading manifests to size the copy",
	"copy":              "copying images",
	"archive":           "writing the archive",
	"open-archive":      "opening the archive",
	"dry-run":           "comparing with the destination (dry run)",
	"cluster-resources": "writing cluster resources",
}

// progressView shows a run's stages and copy progress: on a terminal, each stage
// announced once on its own line and one bar for the copy with bytes, rate and
// time left; otherwise log lines, at most one every logEvery.
type progressView struct {
	w   io.Writer
	tty bool
	log *slog.Logger

	mu      sync.Mutex
	bar     *progressbar.ProgressBar
	drawn   time.Time // when the bar was last drawn
	started time.Time // when the current stage began
	desc    string
	last    pipeline.Progress
	printed pipeline.Progress
	done    chan struct{}
	wg      sync.WaitGroup
}

// attachProgress wires a progressView into o and returns a function that stops it.
func attachProgress(o *pipeline.Options, w io.Writer, log *slog.Logger) func() {
	v := newProgressView(w, log)
	o.Output.Stage = v.stage
	o.Output.Progress = v.progress
	if !v.tty {
		v.wg.Add(1)
		go v.ticker()
	}
	return v.stop
}

// quietOnTerminal returns the logger a run uses on w: on a terminal, where
// the progress view shows the stages, bars and the summary, info lines would
// only repeat them, so the console shows warnings and errors unless
// --log-level was given (the run's log file in working-dir/logs keeps the
// info lines either way).
func quietOnTerminal(w io.Writer, log *slog.Logger, levelGiven bool) *slog.Logger {
	if levelGiven || !isTerminal(w) || log.Enabled(context.Background(), slog.LevelDebug) {
		return log
	}
	return slog.New(minLevel{log.Handler(), slog.LevelWarn})
}

// minLevel passes on the records of at least level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.level && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevel{m.Handler.WithAttrs(as), m.level}
}

func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{m.Handler.WithGroup(name), m.level}
}

func isTerminal(w io.Writer) bool {
	f, isFile := w.(*os.File)
	return isFile && term.IsTerminal(int(f.Fd()))
}

func newProgressView(w io.Writer, log *slog.Logger) *progressView {
	return &progressView{w: w, tty: isTerminal(w), log: log, done: make(chan struct{})}
}

func (v *progressView) stage(s string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.finishBar()
	v.started = time.Now()
	title := stageTitles[s]
	if title == "" {
		title = s
	}
	if v.tty {
		fmt.Fprintf(v.w, "airlock: %s\n", title)
		return
	}
	v.log.Info(title, "stage", s)
}

func (v *progressView) progress(p pipeline.Progress) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.last = p
	if !v.tty {
		return
	}
	if v.bar == nil && !byBytes(p) && time.Since(v.started) < countBarAfter {
		return // a quick counting stage needs no bar
	}
	if v.bar == nil {
		// The copy counts bytes; planning and the dry run count images.
		total := p.BytesTotal
		if !byBytes(p) {
			total = int64(p.ImagesTotal)
		}
		// The time left is the view's own (timeLeft): progressbar's guess from
		// the last seconds' rate says 0s after a large first blob.
		v.desc = v.description(p)
		v.bar = progressbar.NewOptions64(max(total, 1),
			progressbar.OptionSetWriter(v.w),
			progressbar.OptionShowBytes(byBytes(p)),
			progressbar.OptionShowCount(),
			progressbar.OptionUseIECUnits(true),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionSetDescription(v.desc),
		)
		// The first frame shows what is done already, not 0%.
		v.draw()
		return
	}
	// Draw at most every drawEvery, and always the last state (finishBar).
	if time.Since(v.drawn) < drawEvery {
		return
	}
	v.draw()
}

// countBarAfter is how long a counting stage (planning, the dry run) runs
// before it gets a bar.
const countBarAfter = time.Second

// drawEvery is the least time between two drawings of the bar.
const drawEvery = 150 * time.Millisecond

// draw renders the bar for the last progress (lock held).
func (v *progressView) draw() {
	// The value first, then the counts: each call draws a frame, and a frame
	// between the two then shows counts that lag the bytes (blobs finish before
	// their image does), never counts of images whose bytes are not shown.
	if byBytes(v.last) {
		_ = v.bar.Set64(v.last.BytesDone)
	} else {
		_ = v.bar.Set(v.last.ImagesDone)
	}
	if d := v.description(v.last); d != v.desc {
		v.desc = d
		v.bar.Describe(d)
	}
	v.drawn = time.Now()
}

// byBytes reports whether p's stage measures bytes (the copy) rather than
// images (planning, the dry run).
func byBytes(p pipeline.Progress) bool { return p.BytesTotal > 0 }

// description is the bar's text for p (lock held): what is done, and the time
// left once it means something.
func (v *progressView) description(p pipeline.Progress) string {
	s := barDescription(p)
	if left, ok := timeLeft(p, time.Since(v.started)); ok {
		s += ", about " + humanDuration(left) + " left"
	}
	return s
}

func barDescription(p pipeline.Progress) string {
	s := fmt.Sprintf("images %d/%d", p.ImagesDone, p.ImagesTotal)
	if p.ImagesFailed > 0 {
		s += fmt.Sprintf(" (%d failed)", p.ImagesFailed)
	}
	if p.CatalogsTotal > 0 {
		s += fmt.Sprintf(", catalogs %d/%d", p.CatalogsDone, p.CatalogsTotal)
		if p.CatalogsFailed > 0 {
			s += fmt.Sprintf(" (%d failed)", p.CatalogsFailed)
		}
	}
	return s
}

// The time left is shown only after etaAfter and etaFraction of the work:
// before, one large blob (a catalog layer) or a slow first connection makes
// any guess wrong by orders of magnitude.
const (
	etaAfter    = 5 * time.Second
	etaFraction = 0.05
)

// timeLeft guesses how long the stage still runs after elapsed, from the
// fraction of bytes and the fraction of images done so far, taking the longer
// of the two: the bytes alone say "done" once a large catalog layer is in while
// hundreds of small images remain; the images alone say "done" when the last
// image is the largest. ok is false while a guess would mean nothing.
func timeLeft(p pipeline.Progress, elapsed time.Duration) (left time.Duration, ok bool) {
	if elapsed < etaAfter {
		return 0, false
	}
	guess := func(done, total int64) (time.Duration, bool) {
		if total <= 0 || float64(done) < etaFraction*float64(total) {
			return 0, false
		}
		return time.Duration(float64(elapsed) * float64(total-done) / float64(done)), true
	}
	byImages, imagesOK := guess(int64(p.ImagesDone), int64(p.ImagesTotal))
	if !byBytes(p) {
		return byImages, imagesOK && byImages >= time.Second
	}
	byBytesLeft, bytesOK := guess(p.BytesDone, p.BytesTotal)
	if !bytesOK || (p.ImagesTotal > 0 && !imagesOK) || p.BytesDone >= p.BytesTotal {
		return 0, false
	}
	left = max(byBytesLeft, byImages)
	return left, left >= time.Second
}

// humanDuration is d rounded for a person: "40s", "3m10s", "2h05m".
func humanDuration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// finishBar ends the bar of the stage that ended (lock held), leaving it on
// screen as it stands.
func (v *progressView) finishBar() {
	if v.bar == nil {
		return
	}
	v.draw()
	fmt.Fprintln(v.w)
	v.bar, v.desc = nil, ""
}

// ticker logs the copy's progress every logEvery.
func (v *progressView) ticker() {
	defer v.wg.Done()
	t := time.NewTicker(logEvery)
	defer t.Stop()
	for {
		select {
		case <-v.done:
			return
		case <-t.C:
			v.tick()
		}
	}
}

// tick logs one progress line when the progress changed since the last one.
func (v *progressView) tick() {
	v.mu.Lock()
	p, changed, started := v.last, v.last != v.printed, v.started
	v.printed = p
	v.mu.Unlock()
	if !changed || p.ImagesTotal == 0 {
		return
	}
	images := fmt.Sprintf("%d/%d (%s)", p.ImagesDone, p.ImagesTotal, percent(int64(p.ImagesDone), int64(p.ImagesTotal)))
	if !byBytes(p) {
		v.log.Info("progress", "stage", p.Stage, "images", images, "failed", p.ImagesFailed)
		return
	}
	attrs := []any{"stage", p.Stage, "bytes", percent(p.BytesDone, p.BytesTotal) + " of " + humanize.Bytes(p.BytesTotal),
		"images", images, "failed", p.ImagesFailed}
	if p.CatalogsTotal > 0 {
		attrs = append(attrs, "catalogs", fmt.Sprintf("%d/%d", p.CatalogsDone, p.CatalogsTotal))
	}
	if left, ok := timeLeft(p, time.Since(started)); ok {
		attrs = append(attrs, "left", humanDuration(left))
	}
	v.log.Info("progress", attrs...)
}

func percent(n, total int64) string {
	if total <= 0 {
		return "100%"
	}
	return fmt.Sprintf("%d%%", n*100/total)
}

func (v *progressView) stop() {
	close(v.done)
	v.wg.Wait()
	v.mu.Lock()
	v.finishBar()
	v.mu.Unlock()
}
