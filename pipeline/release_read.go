package pipeline

import (
	"context"
	"sync"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/release/graph"
	relsig "github.com/airlock-mirror/airlock/release/signature"
)

// releaseReads is how many payloads Select reads (and verifies) at once.
const releaseReads = 4

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
				c, err := s.readRelease(ctx, wanted[i], p)
				if err != nil {
					out[i].err = err
					continue
				}
				sigs, warn, err := s.verify(ctx, c, store)
				out[i] = releaseRead{c: c, sigs: sigs, warn: warn, err: err}
			}
		}()
	}
	wg.Wait()
	return out
}
