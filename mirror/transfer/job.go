package transfer

import (
	"log/slog"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// Job is one image to copy: the manifest Digest of repository Source at the
// source, to repository Dest at the destination, then tagged with Tags.
type Job struct {
	Source string        `json:"source"`
	Digest digest.Digest `json:"digest"`
	Dest   string        `json:"dest"`
	Tags   []string      `json:"tags,omitempty"`
	// Platforms, when set, is the platform subset of the image ("os/arch"
	// pairs): of an index, only the children oci.Platforms.Keep keeps are
	// copied, and the index itself is pushed unchanged (a sparse index, with
	// the digest the cluster pulls). Empty copies every platform.
	Platforms []string `json:"platforms,omitempty"`
}

// Key names the job in maps: "DEST@DIGEST".
func (j Job) Key() string { return j.Dest + "@" + j.Digest.String() }

// Options tunes Copy. Zero values take the defaults.
type Options struct {
	// ParallelImages is --parallel-images: the most images copied at once
	// (default DefaultParallelImages). Four always run; more start while the
	// bounds of the hosts they touch have spare slots (see admission). An
	// image whose blobs are all at the destination no longer counts while it
	// pushes its manifest (at most as many again do that at once).
	ParallelImages int
	// ParallelLayers is --parallel-layers: blobs of one image transferred at once
	// (default DefaultParallelLayers).
	ParallelLayers int
	// MaxPerRegistry is the least ceiling of the bound on the work touching
	// one registry host at once, across all images (default
	// DefaultMaxPerRegistry with the default ParallelImages and
	// ParallelLayers, else their product). Each blob transfer holds a slot of its source host's
	// bound and one of its destination host's for its whole length. The
	// bound is the endpoint's when it keeps one (endpoint.HostLimiter: the
	// registry client's, shared with its requests, whose ceiling is raised
	// to this one); otherwise the engine keeps one per host, which starts at
	// 10 (or half the ceiling, when lower). Either adapts (adaptive.Limit: it
	// grows while work queues and goes well, halves on 429, 5xx and answers
	// far slower than the host's best). Hosts are taken from the repository
	// names ("host/path").
	MaxPerRegistry int
	// Retry is the policy for whole blob transfers (--retry-times): a transfer
	// that broke or failed verification in either direction is restarted from a
	// fresh source read. nil means retry.DefaultTimes.
	Retry *retry.Policy
	// Logger receives debug and warning lines; nil discards.
	Logger *slog.Logger
	// Held, when set, says (by job index) whether the destination holds each
	// job's manifest and whether its first tag names it, as the caller just
	// asked it (Measure's Sizes.Held): the engine does not ask again.
	Held []Held
	// Recorded, when set, is what the last run to this destination left
	// there, as the workspace's history recorded it: by destination
	// repository, each tag and the digest it named. An image whose first tag
	// is its digest-derived tag (oci.DigestTag: the name pins the digest) and
	// was recorded at that digest is looked for in one listing of its
	// repository's tags, asked once per repository, instead of by a manifest
	// request of its own: listed, it is taken as present and tagged so;
	// absent, it is asked about by digest and copied as on a first run. A
	// repository with fewer than two such images is asked image by image (a
	// listing costs no less). nil asks about every image.
	Recorded map[string]map[string]digest.Digest
	// Progress, when set, is called (serially) after each blob and image.
	Progress func(ProgressEvent)
	// Elsewhere are blobs another worker (a shard of the same plan) sends to the
	// same destination, with the repository it puts each in. Instead of
	// sending such a blob, the engine waits (up to ElsewhereWait) until that
	// repository holds it and mounts it from there; only when the wait runs out
	// (the other worker died) does it send the blob itself.
	Elsewhere endpoint.HeldElsewhere
	// ElsewhereWait bounds the wait for one Elsewhere blob (default 30 minutes).
	ElsewhereWait time.Duration
	// ImageTimeout is --image-timeout: how long one image (its manifests,
	// blobs and tags) may take; 0 means no limit. An image that runs out fails
	// alone; blobs it was sending for other images are sent by them.
	ImageTimeout time.Duration
}

// ProgressEvent reports progress. BytesTotal grows as manifests are discovered.
type ProgressEvent struct {
	ImagesDone, ImagesTotal int
	ImagesFailed            int
	BytesDone, BytesTotal   int64
	// Image is the job that just finished (nil for blob events).
	Image *ImageResult
	// Blob is the blob that just became present at the destination (sent,
	// mounted or already there); nil for image events.
	Blob *endpoint.Descriptor
}

// Image statuses.
const (
	StatusCopied  = "copied"
	StatusSkipped = "skipped"
	StatusFailed  = "failed"
)

// ImageResult is the outcome of one job.
type ImageResult struct {
	Job       Job    `json:"job"`
	Status    string `json:"status"`
	Err       string `json:"error,omitempty"`
	BytesSent int64  `json:"bytesSent"`
	// Class and Hint classify a failure (Classify): Hint is one short line
	// saying what happened and what to do; Err has the detail.
	Class FailureClass `json:"class,omitempty"`
	Hint  string       `json:"hint,omitempty"`
}

// Report is what Copy did. It is JSON-serialisable.
type Report struct {
	Images       []ImageResult `json:"images"`
	BlobsSent    int64         `json:"blobsSent"`
	BlobsMounted int64         `json:"blobsMounted"`
	BlobsSkipped int64         `json:"blobsSkipped"`
	BytesSent    int64         `json:"bytesSent"`
	// BytesResumed is the part of BytesSent an earlier, interrupted
	// transfer had left at the destination (endpoint.ResumableUpload): not
	// written again, and not read again from a source that honours Range.
	BytesResumed  int64         `json:"bytesResumed,omitempty"`
	ManifestsSent int64         `json:"manifestsSent"`
	Duration      time.Duration `json:"duration"`
}

// Failed returns the results of the failed jobs.
func (r *Report) Failed() []ImageResult {
	var out []ImageResult
	for _, im := range r.Images {
		if im.Status == StatusFailed {
			out = append(out, im)
		}
	}
	return out
}
