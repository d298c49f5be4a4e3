package pipeline

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// checkSparseIndexes stops a run whose jobs copy platform subsets (sparse
// indexes: the index pushed whole, only some of its children) into a
// registry that refuses them, before any image is pushed, instead of failing
// each of those images after its blobs went over. The registry is asked once
// per host and run (registry.Client.AcceptsSparseIndexes, in a scratch
// repository beside the preflight's); a probe that cannot tell lets the run
// go on (the images then fail one by one, with the same fix named).
func (r *run) checkSparseIndexes(ctx context.Context, dst endpoint.Destination, jobs []transfer.Job) error {
	reg, ok := dst.(*registry.Client)
	if !ok {
		return nil
	}
	subsets := map[string]int{} // destination host → jobs with a platform subset
	for _, j := range jobs {
		if len(j.Platforms) > 0 {
			subsets[endpoint.RepoHost(j.Dest)]++
		}
	}
	hosts := make([]string, 0, len(subsets))
	for h := range subsets {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, host := range hosts {
		scratch := host + "/airlock-preflight"
		if d := strings.TrimSuffix(r.dest, "/"); endpoint.RepoHost(d) == host && strings.Contains(d, "/") {
			scratch = d + "/airlock-preflight"
		}
		accepts, refusal, err := reg.AcceptsSparseIndexes(ctx, scratch)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.log.Warn("could not tell whether the destination accepts sparse indexes: going on", "host", host, "error", err.Error())
			continue
		}
		if !accepts {
			return fmt.Errorf("destination registry %s refuses sparse image indexes (%w), which the %d image(s) with platforms: in %s are pushed as (the index whole, only the platforms chosen): nothing was pushed. Mirror whole indexes (remove platforms: from the configuration), or use a registry that accepts them (Distribution 3 with validation.manifests.indexes.platforms: none; Quay with FEATURE_SPARSE_INDEX: true; airlock registry serve). The registry answered: %v",
				host, transfer.ErrSparseIndexRefused, subsets[host], r.configSource(), refusal)
		}
	}
	return nil
}

// configSource names the run's configuration file ("the configuration" when
// it has none: an archive's).
func (r *run) configSource() string {
	if r.cfg != nil && r.cfg.Source != "" {
		return r.cfg.Source
	}
	return "the configuration"
}
