package pipeline

import (
	"context"
	"sync"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// Progress is what a run has done of its copy stage, measured against totals
// known before the first byte moves: the images of the plan and the distinct
// blobs their manifests reference. In the copy, the catalog images are counted
// apart from the images (their layer is often most of the bytes); their bytes
// are in the byte totals.
type Progress struct {
	// Stage is the stage being measured ("copy").
	Stage                                       string
	ImagesDone, ImagesFailed, ImagesTotal       int
	CatalogsDone, CatalogsFailed, CatalogsTotal int
	BlobsDone, BlobsTotal                       int
	BytesDone, BytesTotal                       int64
}

// tracker turns the copy engine's events into Progress against the totals.
type tracker struct {
	mu      sync.Mutex
	cb      func(Progress)
	p       Progress
	size    map[digest.Digest]int64 // every blob of the plan
	done    map[digest.Digest]bool
	perJob  map[string][]endpoint.Descriptor // by job key
	catalog map[string]bool                  // the catalog images' job keys
}

// track reads the manifests of jobs at src for the totals (stage "measure"),
// reports the start of the copy, and returns the callback for the copy engine.
// The copy then reads the manifests from src's memory, not from the source again.
// measured, when not nil, is the measure made already (checkSpace's): it is
// not made again.
func (r *run) track(ctx context.Context, src *transfer.MemoSource, dst endpoint.Destination, jobs []transfer.Job, pre *transfer.Prefetch, measured *transfer.Sizes) (func(transfer.ProgressEvent), []transfer.Held, error) {
	defer src.StopFilling()
	if len(jobs) == 0 {
		return nil, nil, nil // nothing to copy: no stage, no bar
	}
	if r.opts.Output.Progress == nil {
		r.stage("copy")
		if measured != nil {
			return nil, measured.Held, nil
		}
		return nil, nil, nil
	}
	s := measured
	if s == nil {
		r.stage("measure")
		var err error
		asked := pre.Destination(dst) // what the prefetch learnt (it has the record)
		if pre == nil {
			asked = transfer.WithRecord(dst, r.recordedTags())
		}
		if s, err = transfer.Measure(ctx, src, asked, jobs, 16, r.stageProgress("measure")); err != nil {
			return nil, nil, err
		}
	}
	t := &tracker{cb: r.opts.Output.Progress, size: map[digest.Digest]int64{}, done: map[digest.Digest]bool{}, perJob: map[string][]endpoint.Descriptor{}, catalog: map[string]bool{}}
	t.p = Progress{Stage: "copy", BlobsTotal: s.Blobs, BytesTotal: s.Bytes}
	if r.res.Plan != nil {
		for _, im := range r.res.Plan.Images {
			if im.Kind == mirror.KindCatalog {
				t.catalog[im.Job().Key()] = true
			}
		}
	}
	for i, j := range jobs {
		if t.catalog[j.Key()] {
			t.p.CatalogsTotal++
		} else {
			t.p.ImagesTotal++
		}
		t.perJob[j.Key()] = s.PerJob[i]
		for _, b := range s.PerJob[i] {
			t.size[b.Digest] = b.Size
		}
	}
	r.stage("copy")
	t.cb(t.p)
	return t.event, s.Held, nil
}

// mark counts blob d as done (lock held).
func (t *tracker) mark(d digest.Digest) {
	size, ok := t.size[d]
	if !ok || t.done[d] {
		return
	}
	t.done[d] = true
	t.p.BlobsDone++
	t.p.BytesDone += size
}

func (t *tracker) event(ev transfer.ProgressEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ev.Blob != nil {
		t.mark(ev.Blob.Digest)
	}
	if ev.Image != nil {
		if ev.Image.Status != transfer.StatusFailed {
			// An image already at the destination is skipped whole: its blobs
			// are there too.
			for _, b := range t.perJob[ev.Image.Job.Key()] {
				t.mark(b.Digest)
			}
		}
		done, failed := &t.p.ImagesDone, &t.p.ImagesFailed
		if t.catalog[ev.Image.Job.Key()] {
			done, failed = &t.p.CatalogsDone, &t.p.CatalogsFailed
		}
		*done++
		if ev.Image.Status == transfer.StatusFailed {
			*failed++
		}
	}
	t.cb(t.p)
}
