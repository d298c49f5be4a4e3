package pipeline

import (
	"context"
	"fmt"
	"sync"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/release/graph"
	relsig "github.com/airlock-mirror/airlock/release/signature"
)

// releaseReads is how many payloads Select reads (and verifies) at once.
const releaseReads = 4

// readVerified reads the release w and verifies its signatures. When the
// graph names the payload by digest, the signatures are fetched and checked
// while the payload is read (a signature is about the digest, not the
// content): the round trips to the signature store are not added to the
// payload's.
func (s *releaseSource) readVerified(ctx context.Context, w graph.Release, p *imageset.Platform, store relsig.Store) releaseRead {
	named, ok := releaseByDigest(w)
	if !ok {
		c, err := s.readRelease(ctx, w, p)
		if err != nil {
			return releaseRead{err: err}
		}
		sigs, warn, err := s.verify(ctx, c, store)
		return releaseRead{c: c, sigs: sigs, warn: warn, err: err}
	}
	verified := make(chan releaseRead, 1)
	go func() {
		sigs, warn, err := s.verify(ctx, named, store)
		verified <- releaseRead{sigs: sigs, warn: warn, err: err}
	}()
	c, err := s.readRelease(ctx, w, p)
	v := <-verified
	switch {
	case err != nil:
		return releaseRead{err: err}
	case c.Digest != named.Digest || c.Repo != named.Repo:
		// Not reached: the payload was read by that digest.
		return releaseRead{err: fmt.Errorf("release %s: read as %s, not the payload the graph names", w.Payload, c.PayloadRef())}
	}
	v.c = c
	return v
}

// releaseByDigest is the release w names by digest, as its signatures are
// checked (version and architecture from the graph, which the payload must
// agree with); ok is false when w names its payload by tag.
func releaseByDigest(w graph.Release) (*chosenRelease, bool) {
	r, err := oci.ParseReference(w.Payload)
	if err != nil || r.Digest == "" || w.Version == "" || w.Arch == "" {
		return nil, false
	}
	return &chosenRelease{Ref: w.Payload, Version: w.Version, Arch: w.Arch, Repo: r.Repository(), Digest: r.Digest}, true
}

// readRelease's result for one wanted release, with its verified signatures.
type releaseRead struct {
	c    *chosenRelease
	sigs [][]byte
	warn string
	err  error
}

// readReleases reads and verifies the wanted releases, several payloads at
// once (each is a chain of round trips: manifest, config, layers, then the
// signature; read one after the other they delay every component of every
// release). The results are in wanted's order. Entries naming the same
// payload are read one after the other, by one reader (they share its
// folder in the workspace).
func (s *releaseSource) readReleases(ctx context.Context, wanted []graph.Release, p *imageset.Platform, store relsig.Store) []releaseRead {
	out := make([]releaseRead, len(wanted))
	// Made once before the readers start: both are made on first use.
	_ = s.r.srcRegistry()
	if _, err := s.keys(); err != nil {
		for i := range out {
			out[i].err = err
		}
		return out
	}
	byPayload := map[string][]int{}
	var order []string
	for i, w := range wanted {
		if _, ok := byPayload[w.Payload]; !ok {
			order = append(order, w.Payload)
		}
		byPayload[w.Payload] = append(byPayload[w.Payload], i)
	}
	sem := make(chan struct{}, releaseReads)
	var wg sync.WaitGroup
	for _, payload := range order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			for _, i := range byPayload[payload] {
				out[i] = s.readVerified(ctx, wanted[i], p, store)
			}
		}()
	}
	wg.Wait()
	return out
}
