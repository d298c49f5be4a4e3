package bench

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// linkTimeline records the requests the WAN simulator served (its Observe
// hook) while on: the release section's time line of a run, written next to
// the work folder (release-timeline-*.txt, kept with -keep) and summed up in
// the row's note.
type linkTimeline struct {
	mu      sync.Mutex
	on      bool
	t0      time.Time
	entries []linkRequest
}

// linkRequest is one request over the link.
type linkRequest struct {
	Method, Path string
	Status       int
	Start, End   time.Duration // since the timeline started
}

// observe is the WAN simulator's Observe hook.
func (t *linkTimeline) observe(method, path string, status int, start, end time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.on {
		return
	}
	t.entries = append(t.entries, linkRequest{Method: method, Path: path, Status: status, Start: start.Sub(t.t0), End: end.Sub(t.t0)})
}

// start begins a new time line at t0 (the run's start).
func (t *linkTimeline) start(t0 time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.on, t.t0, t.entries = true, t0, nil
}

// stop ends the time line and returns its requests by start time.
func (t *linkTimeline) stop() []linkRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.on = false
	out := append([]linkRequest(nil), t.entries...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}

// write writes the requests, one a line: "start end status method path"
// (seconds since the run started).
func writeTimeline(w io.Writer, reqs []linkRequest) error {
	for _, r := range reqs {
		if _, err := fmt.Fprintf(w, "%.4f %.4f %d %s %s\n", r.Start.Seconds(), r.End.Seconds(), r.Status, r.Method, r.Path); err != nil {
			return err
		}
	}
	return nil
}

// releaseMilestones sums up a release run's time line: when the link first
// carried a request, when the first component manifest was asked for (the
// component list is known), when the first component blob was, when the
// last request ended, and how many times each payload blob was read.
type releaseMilestones struct {
	First, FirstComponent, FirstComponentBlob, Last time.Duration
	// PayloadBlobReads is the most times one blob of the payload's
	// repository was fetched from the registry host.
	PayloadBlobReads int
}

// milestones reads reqs; payloadRepo and componentRepo are the
// repositories' paths ("ocp/release", "ocp/art-dev").
func milestones(reqs []linkRequest, payloadRepo, componentRepo string) releaseMilestones {
	var m releaseMilestones
	m.FirstComponent, m.FirstComponentBlob = -1, -1
	reads := map[string]int{}
	for i, r := range reqs {
		if i == 0 {
			m.First = r.Start
		}
		m.Last = max(m.Last, r.End)
		switch {
		case strings.HasPrefix(r.Path, "/v2/"+componentRepo+"/manifests/") && m.FirstComponent < 0:
			m.FirstComponent = r.Start
		case strings.HasPrefix(r.Path, "/v2/"+componentRepo+"/blobs/") && m.FirstComponentBlob < 0:
			m.FirstComponentBlob = r.Start
		case strings.HasPrefix(r.Path, "/v2/"+payloadRepo+"/blobs/") && r.Method == "GET":
			reads[r.Path]++
			m.PayloadBlobReads = max(m.PayloadBlobReads, reads[r.Path])
		}
	}
	return m
}

func (m releaseMilestones) String() string {
	at := func(d time.Duration) string {
		if d < 0 {
			return "none"
		}
		return Seconds(d)
	}
	return fmt.Sprintf("time line: first request %s, first component manifest %s, first component blob %s, last request ends %s; each payload blob read at most %d×",
		at(m.First), at(m.FirstComponent), at(m.FirstComponentBlob), at(m.Last), m.PayloadBlobReads)
}

// writeTimelineFile writes reqs to path (writeTimeline).
func writeTimelineFile(path string, reqs []linkRequest) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeTimeline(f, reqs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
