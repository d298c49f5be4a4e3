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
// oci:// catalogs); everything else from Default.
type SourceMux struct {
	Default endpoint.Source

	mu      sync.Mutex
	layouts map[string]*layout.Source
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
	return s.Blob(ctx, repo, d)
}

// BlobFrom implements endpoint.RangeSource with the routed source's.
func (m *SourceMux) BlobFrom(ctx context.Context, repo string, d endpoint.Descriptor, off int64) (io.ReadCloser, int64, error) {
	s, err := m.route(repo)
	if err != nil {
		return nil, 0, err
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
