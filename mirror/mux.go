package mirror

import (
	"context"
	"io"
	"strings"
	"sync"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/layout"
)

// SourceMux routes reads to the right source: repositories named
// LayoutRepoPrefix+dir are read from that OCI image layout (rebuilt catalogs,
// oci:// catalogs); everything else from Default, except blobs already held
// in a layout added with AddLocalBlobs.
type SourceMux struct {
	Default endpoint.Source

	mu      sync.Mutex
	layouts map[string]*layout.Source
	// local are layouts holding blobs already read from Default.
	local []*layout.Source
}

// AddLocalBlobs adds an OCI image layout holding blobs a run already read
// from Default's registries (an image a source fetched to read it): blobs
// of Default's repositories are read there first, by digest, and from
// Default when it lacks them. The copy engine verifies every blob's digest,
// wherever it was read.
func (m *SourceMux) AddLocalBlobs(dir string) error {
	s, err := layout.NewSource(dir)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.local = append(m.local, s)
	return nil
}

// localBlob opens d of repo (one of Default's) from the first local layout
// holding it; nil when none does or repo is a layout's (a layout that
// cannot open it is passed over: Default serves it).
func (m *SourceMux) localBlob(ctx context.Context, repo string, d endpoint.Descriptor, off int64) (io.ReadCloser, int64) {
	if strings.HasPrefix(repo, LayoutRepoPrefix) {
		return nil, 0
	}
	m.mu.Lock()
	local := m.local
	m.mu.Unlock()
	for _, s := range local {
		if rc, start, err := endpoint.BlobFrom(ctx, s, repo, d, off); err == nil {
			return rc, start
		}
	}
	return nil, 0
}

var (
	_ endpoint.Source      = (*SourceMux)(nil)
	_ endpoint.HostLimiter = (*SourceMux)(nil)
)

func (m *SourceMux) route(repo string) (endpoint.Source, error) {
	dir, ok := strings.CutPrefix(repo, LayoutRepoPrefix)
	if !ok {
		return m.Default, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.layouts[dir]; ok {
		return s, nil
	}
	s, err := layout.NewSource(dir)
	if err != nil {
		return nil, err
	}
	if m.layouts == nil {
		m.layouts = map[string]*layout.Source{}
	}
	m.layouts[dir] = s
	return s, nil
}

// Manifest implements endpoint.Source.
func (m *SourceMux) Manifest(ctx context.Context, repo, reference string) (endpoint.Manifest, error) {
	s, err := m.route(repo)
	if err != nil {
		return endpoint.Manifest{}, err
	}
	return s.Manifest(ctx, repo, reference)
}

// Blob implements endpoint.Source.
func (m *SourceMux) Blob(ctx context.Context, repo string, d endpoint.Descriptor) (io.ReadCloser, error) {
	s, err := m.route(repo)
	if err != nil {
		return nil, err
	}
	if rc, _ := m.localBlob(ctx, repo, d, 0); rc != nil {
		return rc, nil
	}
	return s.Blob(ctx, repo, d)
}

// BlobFrom implements endpoint.RangeSource with the routed source's.
func (m *SourceMux) BlobFrom(ctx context.Context, repo string, d endpoint.Descriptor, off int64) (io.ReadCloser, int64, error) {
	s, err := m.route(repo)
	if err != nil {
		return nil, 0, err
	}
	if rc, start := m.localBlob(ctx, repo, d, off); rc != nil {
		return rc, start, nil
	}
	return endpoint.BlobFrom(ctx, s, repo, d, off)
}

// HostLimit implements endpoint.HostLimiter with Default's bounds; layouts,
// read from the local disk, have none.
func (m *SourceMux) HostLimit(host string) endpoint.HostLimit {
	if strings.HasPrefix(host, LayoutRepoPrefix) {
		return nil
	}
	if hl, ok := m.Default.(endpoint.HostLimiter); ok {
		return hl.HostLimit(host)
	}
	return nil
}
