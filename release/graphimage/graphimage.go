// Package graphimage is the graph-data image of an in-cluster OpenShift
// Update Service (mirror.platform.graph): what oc-mirror v2 builds, and
// where. The update service's graph-data tarball (channels, blocked edges,
// release metadata) is read over HTTP under the run's retry policy, checked,
// and laid into one more layer of a base image whose command copies it where
// the update service's graph-builder reads it. The image itself is built by
// the catalog image builder (reproducibly); this package knows no registry
// and no copying.
package graphimage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"path"
	"time"

	"github.com/airlock-mirror/airlock/internal/redact"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// oc-mirror v2's choices (internal/pkg/release/const.go), kept so that a
// cluster set up from oc-mirror's output finds the same image.
const (
	// DefaultURL serves the update service's graph data as a gzip tarball.
	DefaultURL = "https://api.openshift.com/api/upgrades_info/graph-data"
	// DefaultBaseImage is the image the graph data is added to (it needs
	// /bin/bash and cp).
	DefaultBaseImage = "registry.access.redhat.com/ubi9/ubi:latest"
	// Folder holds the graph data in the image.
	Folder = "/var/lib/cincinnati-graph-data"
	// MountPath is where the update service's init container wants it.
	MountPath = "/var/lib/cincinnati/graph-data"
	// Repo and Tag are the image's destination under the mirror.
	Repo = "openshift/graph-image"
	Tag  = "latest"
)

// DefaultMaxBytes bounds the tarball read (the real one is a few MiB).
const DefaultMaxBytes int64 = 256 << 20

// DefaultTimeout bounds each attempt to read the tarball.
const DefaultTimeout = 5 * time.Minute

// Command is the image's command: copy the graph data into the volume the
// update service mounts, as oc-mirror's image does.
func Command() []string {
	return []string{"/bin/bash", "-c", fmt.Sprintf("exec cp -rp %s/* %s", Folder, MountPath)}
}

// History is the text of the graph-data layer's history entry.
const History = "add the update service's graph data at " + Folder

// FetchOptions say where and how the tarball is read.
type FetchOptions struct {
	// URL is the graph-data tarball's address (default DefaultURL).
	URL string
	// Client sends the requests (nil: http.DefaultClient).
	Client *http.Client
	// Retry is the run's retry policy.
	Retry retry.Policy
	// Timeout bounds each attempt (default DefaultTimeout); MaxBytes the
	// tarball (default DefaultMaxBytes).
	Timeout  time.Duration
	MaxBytes int64
	Log      *slog.Logger
}

// Fetch reads the graph-data tarball. Errors name the URL and the flags
// that change where it comes from.
func Fetch(ctx context.Context, o FetchOptions) ([]byte, error) {
	u := o.URL
	if u == "" {
		u = DefaultURL
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	shown, _ := redact.Credentials(u)
	b, err := o.Retry.GetDocument(ctx, log, u, retry.Get{Client: o.Client, Timeout: o.Timeout, MaxBytes: o.MaxBytes})
	if err != nil {
		hint := "check the address, or give the tarball with --graph-data-file (for sites that cannot reach it) or another address with --graph-data-url"
		if errors.Is(err, endpoint.ErrNotFound) {
			hint = "the address serves no graph data: " + hint
		}
		return nil, fmt.Errorf("mirror.platform.graph: reading the update service's graph data from %s: %w; %s", shown, err, hint)
	}
	return b, nil
}

// Check reports whether fsys (the extracted tarball) is the update service's
// graph data: a channels/ folder of channel files (YAML).
func Check(fsys fs.FS) error {
	entries, err := fs.ReadDir(fsys, "channels")
	if err != nil {
		return fmt.Errorf("it holds no channels/ folder (%w): it is not the update service's graph data (cincinnati-graph-data)", err)
	}
	for _, e := range entries {
		if e.Type().IsRegular() && (path.Ext(e.Name()) == ".yaml" || path.Ext(e.Name()) == ".yml") {
			return nil
		}
	}
	return errors.New("its channels/ folder holds no channel file (*.yaml): it is not the update service's graph data (cincinnati-graph-data)")
}
