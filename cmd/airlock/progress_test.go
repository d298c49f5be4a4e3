package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

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
