package signature

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Referrers of one subject in one destination repository, as copied.
type Referrers struct {
	Repo    string
	Subject digest.Digest
	List    []oci.Referrer
}

// PublishStats say what KeepFindable did.
type PublishStats struct {
	// WithAPI counts subjects whose destination has the referrers API (the
	// registry indexes referrers itself); Indexes counts fallback indexes
	// pushed (or already up to date).
	WithAPI, Indexes int
}

// KeepFindable makes the copied referrers findable at the destination: a
// registry with the referrers API finds them by their subject field already; on
// one without it, the fallback index under the tag "sha256-<hex>" of each
// subject lists them (merged with the entries already there). Destinations that
// are not registries (archives) are left alone: disk-to-mirror does this when
// it pushes. Each failure is returned, one per subject, joined.
func KeepFindable(ctx context.Context, dst endpoint.Destination, groups []Referrers) (PublishStats, error) {
	var st PublishStats
	api, hasAPI := dst.(endpoint.Referrers)
	read, readable := dst.(endpoint.Source)
	if !hasAPI || !readable {
		return st, nil
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].Repo != groups[j].Repo {
			return groups[i].Repo < groups[j].Repo
		}
		return groups[i].Subject < groups[j].Subject
	})
	noAPI := map[string]bool{}
	var errs []error
	for _, g := range groups {
		host := endpoint.RepoHost(g.Repo)
		if !noAPI[host] {
			_, err := api.Referrers(ctx, g.Repo, g.Subject)
			if err == nil {
				st.WithAPI++
				continue
			}
			if !errors.Is(err, endpoint.ErrReferrersUnsupported) {
				errs = append(errs, err)
				continue
			}
			noAPI[host] = true
		}
		if err := pushIndex(ctx, read, dst, g); err != nil {
			errs = append(errs, err)
			continue
		}
		st.Indexes++
	}
	return st, errors.Join(errs...)
}

// pushIndex writes g's fallback index, keeping the entries already there.
func pushIndex(ctx context.Context, read endpoint.Source, dst endpoint.Destination, g Referrers) error {
	tag := oci.ReferrersTag(g.Subject)
	list := append([]oci.Referrer(nil), g.List...)
	old, err := read.Manifest(ctx, g.Repo, tag)
	switch {
	case err == nil && old.Digest == g.Subject:
		// An earlier run gave the digest-only image its digest tag: on a
		// registry without the referrers API the tag is the index's (the image
		// stays pullable by digest).
	case err == nil && oci.IsIndex(old.MediaType):
		refs, perr := oci.Parse(oci.Manifest(old))
		if perr != nil {
			return fmt.Errorf("referrers index %s:%s: %w", g.Repo, tag, perr)
		}
		for _, c := range refs.Manifests {
			list = append(list, oci.Referrer{Descriptor: c.Descriptor, ArtifactType: c.ArtifactType, Annotations: c.Annotations})
		}
	case err == nil:
		return fmt.Errorf("referrers of %s@%s: the tag %s holds %s, not a referrers index; remove it or use a registry with the referrers API", g.Repo, g.Subject, tag, old.MediaType)
	case !NotFound(err):
		return err
	}
	m, err := oci.ReferrersIndex(list)
	if err != nil {
		return err
	}
	if old.Digest == m.Digest {
		return nil
	}
	if err := dst.PutManifest(ctx, g.Repo, tag, m); err != nil {
		return fmt.Errorf("push referrers index %s:%s: %w", g.Repo, tag, err)
	}
	return nil
}

// HasReferrersAPI reports whether dst is a registry with the referrers API,
// asking about repo@d (any digest: a registry with the API answers 200 with an
// empty index). A destination that cannot list referrers (an archive) has none.
func HasReferrersAPI(ctx context.Context, dst endpoint.Destination, repo string, d digest.Digest) (bool, error) {
	api, ok := dst.(endpoint.Referrers)
	if !ok {
		return false, nil
	}
	_, err := api.Referrers(ctx, repo, d)
	if errors.Is(err, endpoint.ErrReferrersUnsupported) {
		return false, nil
	}
	return err == nil, err
}
