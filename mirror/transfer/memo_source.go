package transfer

import (
	"context"
	"io"
	"sync"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// MemoSource keeps the manifests read while measuring the plan until the copy
// reads them, so that each manifest is fetched from the source once.
type MemoSource struct {
	endpoint.Source
	mu      sync.Mutex
	m       map[string]endpoint.Manifest
	filling bool
}

// NewMemoSource keeps what src serves until StopFilling.
func NewMemoSource(src endpoint.Source) *MemoSource {
	return &MemoSource{Source: src, m: map[string]endpoint.Manifest{}, filling: true}
}

// StopFilling ends the measuring: later reads are not kept.
func (s *MemoSource) StopFilling() {
	s.mu.Lock()
	s.filling = false
	s.mu.Unlock()
}

// Manifest implements endpoint.Source: a manifest read before is served once
// more from memory, then forgotten. A cancelled ctx fails the read as it
// fails a read from the source.
func (s *MemoSource) Manifest(ctx context.Context, repo, reference string) (endpoint.Manifest, error) {
	if err := ctx.Err(); err != nil {
		return endpoint.Manifest{}, err
	}
	k := repo + "@" + reference
	s.mu.Lock()
	m, ok := s.m[k]
	if ok {
		delete(s.m, k)
	}
	s.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := s.Source.Manifest(ctx, repo, reference)
	if err == nil {
		s.mu.Lock()
		if s.filling {
			s.m[k] = m
		}
		s.mu.Unlock()
	}
	return m, err
}

// HostLimit implements endpoint.HostLimiter with the bounds of the source it
// wraps (nil when that keeps none).
func (s *MemoSource) HostLimit(host string) endpoint.HostLimit {
	if hl, ok := s.Source.(endpoint.HostLimiter); ok {
		return hl.HostLimit(host)
	}
	return nil
}

// BlobFrom implements endpoint.RangeSource with the source's.
func (s *MemoSource) BlobFrom(ctx context.Context, repo string, d endpoint.Descriptor, off int64) (io.ReadCloser, int64, error) {
	return endpoint.BlobFrom(ctx, s.Source, repo, d, off)
}
