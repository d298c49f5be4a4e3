package pipeline

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/release/graph"
	"github.com/airlock-mirror/airlock/release/graphimage"
)

// releaseProbeTimeout bounds each of the release services' probes (their
// requests keep their own deadlines and the retry policy inside it).
const releaseProbeTimeout = 3 * time.Minute

// probed is what Preflight read from the release services, kept for Select.
type probed struct {
	mu     sync.Mutex
	graphs map[string][]byte // by type/channel/arch
	// graphData is the graph-data tarball.
	graphData []byte
}

// probedGraphs serves the graphs Preflight read, then asks the service.
type probedGraphs struct {
	graph.Fetcher
	p *probed
}

func (f *probedGraphs) Fetch(ctx context.Context, typ, channel, arch string) ([]byte, error) {
	key := typ + "/" + channel + "/" + arch
	f.p.mu.Lock()
	b, ok := f.p.graphs[key]
	f.p.mu.Unlock()
	if ok {
		return b, nil
	}
	b, err := f.Fetcher.Fetch(ctx, typ, channel, arch)
	if err == nil {
		f.p.mu.Lock()
		if f.p.graphs == nil {
			f.p.graphs = map[string][]byte{}
		}
		f.p.graphs[key] = b
		f.p.mu.Unlock()
	}
	return b, err
}

// Preflight names the registry of a payload named directly, and on the
// connected side checks, before anything is copied, that the release
// services answer: the update service (the first channel's graph, kept for
// Select), the signature store (unless --ignore-release-signature: the
// signatures of a digest no release has, which a store answers with a
// 404) and, for graph: true, the graph-data tarball (read and kept) or its
// file. Each failure names the URL and the flag that changes it.
// Disk-to-mirror reads no network, and a shard only copies its plan: they
// probe nothing.
func (s *releaseSource) Preflight(ctx context.Context) ([]Probe, error) {
	p := s.platform()
	if p == nil {
		return nil, nil
	}
	var probes []Probe
	if p.Release != "" {
		probes = append(probes, Probe{Ref: p.Release, What: "source registry of release " + p.Release})
	}
	if s.r.workflow == mirror.DiskToMirror || (s.r.opts.Run.PlanFile != "" && !s.r.opts.Run.Finish) {
		return probes, nil
	}
	ctx, cancel := context.WithTimeout(ctx, releaseProbeTimeout)
	defer cancel()
	if len(p.Channels) > 0 {
		ch, arch := p.Channels[0], graph.Archs(p)[0]
		typ := ch.Type
		if typ == "" {
			typ = graph.TypeOCP
		}
		if _, err := s.graphs().Fetch(ctx, typ, ch.Name, arch); err != nil {
			return nil, fmt.Errorf("preflight: mirror.platform: the update service does not answer: %w", err)
		}
	}
	if !s.r.opts.Releases.IgnoreSignatures {
		st, err := s.signatureStore()
		if err != nil {
			return nil, err
		}
		if _, err := st.Signatures(ctx, digest.FromString("airlock preflight: no release has this digest")); err != nil {
			return nil, fmt.Errorf("preflight: mirror.platform: the release signature store does not answer: %w; set --release-signature-url (or $OCP_SIGNATURE_URL) to a store that does, or mirror the releases unverified with --ignore-release-signature", err)
		}
	}
	if p.Graph {
		if err := s.checkGraphBase(); err != nil {
			return nil, fmt.Errorf("preflight: %w", err)
		}
		if f := s.r.opts.Releases.GraphDataFile; f != "" {
			if _, err := os.Stat(f); err != nil {
				return nil, fmt.Errorf("preflight: mirror.platform.graph: --graph-data-file %s: %w", f, err)
			}
		} else {
			b, err := graphimage.Fetch(ctx, graphimage.FetchOptions{URL: s.graphDataURL(), Retry: *s.r.retry(), Log: s.r.log})
			if err != nil {
				return nil, fmt.Errorf("preflight: %w", err)
			}
			s.probed.graphData = b
		}
	}
	return probes, nil
}
