package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/pipeline"
)

// TestProgressOffTerminal: off a terminal, stages are log lines, and progress is
// one line per interval at most, with percent of bytes and images, only when it
// changed.
func TestProgressOffTerminal(t *testing.T) {
	var logs, out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	v := newProgressView(&out, log) // the ticker calls v.tick every logEvery
	v.stage("plan")
	v.stage("copy")
	v.progress(pipeline.Progress{Stage: "copy", ImagesTotal: 4, BlobsTotal: 8, BytesTotal: 4096})
	v.progress(pipeline.Progress{Stage: "copy", ImagesDone: 1, ImagesTotal: 4, BlobsDone: 3, BlobsTotal: 8, BytesDone: 1024, BytesTotal: 4096})
	v.tick()
	v.tick() // nothing changed: no line
	v.progress(pipeline.Progress{Stage: "copy", ImagesDone: 4, ImagesTotal: 4, ImagesFailed: 1, BlobsDone: 8, BlobsTotal: 8, BytesDone: 4096, BytesTotal: 4096})
	v.tick()
	v.stop()
	if out.Len() != 0 {
		t.Errorf("drew on a non-terminal: %q", out.String())
	}
	got := logs.String()
	for _, want := range []string{
		`level=INFO msg="resolving images to digests" stage=plan`,
		`level=INFO msg="copying images" stage=copy`,
		`level=INFO msg=progress stage=copy bytes="25% of 4.0 KiB" images="1/4 (25%)" failed=0`,
		`level=INFO msg=progress stage=copy bytes="100% of 4.0 KiB" images="4/4 (100%)" failed=1`,
	} {
		if strings.Count(got, want) != 1 {
			t.Errorf("log lacks exactly one %q:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "msg=progress"); n != 2 {
		t.Errorf("%d progress lines, want 2 (one per change):\n%s", n, got)
	}
}

// TestTimeLeft: the time left is hidden until it means something (etaAfter and
// etaFraction of the work), and is the longer of the bytes' and the images'
// guesses, so that a large catalog layer done first does not say "0s".
func TestTimeLeft(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name    string
		p       pipeline.Progress
		elapsed time.Duration
		want    string // "" = hidden
	}{
		{"first seconds", pipeline.Progress{ImagesDone: 50, ImagesTotal: 100, BytesDone: 50 * mib, BytesTotal: 100 * mib}, 2 * time.Second, ""},
		{"too little done", pipeline.Progress{ImagesDone: 1, ImagesTotal: 100, BytesDone: 1 * mib, BytesTotal: 100 * mib}, 30 * time.Second, ""},
		{"half way", pipeline.Progress{ImagesDone: 50, ImagesTotal: 100, BytesDone: 50 * mib, BytesTotal: 100 * mib}, 10 * time.Second, "10s"},
		// The catalog layer is 80% of the bytes; a fifth of the images are done.
		{"catalog layer first", pipeline.Progress{ImagesDone: 20, ImagesTotal: 100, CatalogsDone: 1, CatalogsTotal: 1, BytesDone: 82 * mib, BytesTotal: 100 * mib}, 10 * time.Second, "40s"},
		// The last image holds most bytes.
		{"large last image", pipeline.Progress{ImagesDone: 99, ImagesTotal: 100, BytesDone: 10 * mib, BytesTotal: 100 * mib}, 60 * time.Second, "9m00s"},
		{"no image done yet", pipeline.Progress{ImagesTotal: 100, CatalogsDone: 1, CatalogsTotal: 1, BytesDone: 80 * mib, BytesTotal: 100 * mib}, 10 * time.Second, ""},
		{"all bytes in", pipeline.Progress{ImagesDone: 99, ImagesTotal: 100, BytesDone: 100 * mib, BytesTotal: 100 * mib}, 10 * time.Second, ""},
		{"under a second", pipeline.Progress{ImagesDone: 99, ImagesTotal: 100, BytesDone: 99 * mib, BytesTotal: 100 * mib}, 10 * time.Second, ""},
		{"counting stage", pipeline.Progress{Stage: "measure", ImagesDone: 600, ImagesTotal: 3000}, 6 * time.Second, "24s"},
		{"hours", pipeline.Progress{ImagesDone: 10, ImagesTotal: 100, BytesDone: 10 * mib, BytesTotal: 100 * mib}, 20 * time.Minute, "3h00m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			left, ok := timeLeft(tc.p, tc.elapsed)
			got := ""
			if ok {
				got = humanDuration(left)
			}
			if got != tc.want {
				t.Errorf("timeLeft(%+v, %v) = %q (%v), want %q", tc.p, tc.elapsed, got, left, tc.want)
			}
		})
	}
}

// TestBarDescription: catalogs are counted apart from images.
func TestBarDescription(t *testing.T) {
	for _, tc := range []struct {
		p    pipeline.Progress
		want string
	}{
		{pipeline.Progress{ImagesTotal: 644, CatalogsTotal: 1}, "images 0/644, catalogs 0/1"},
		{pipeline.Progress{ImagesDone: 3, ImagesFailed: 1, ImagesTotal: 644, CatalogsDone: 1, CatalogsFailed: 1, CatalogsTotal: 1}, "images 3/644 (1 failed), catalogs 1/1 (1 failed)"},
		{pipeline.Progress{Stage: "measure", ImagesDone: 587, ImagesTotal: 645}, "images 587/645"},
	} {
		if got := barDescription(tc.p); got != tc.want {
			t.Errorf("barDescription(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}
