package pipeline

import (
	"fmt"

	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/release/graphimage"
)

// graphBaseRef is the graph-data image's base image: --graph-base-image, else
// oc-mirror's choice.
func (s *releaseSource) graphBaseRef() string {
	if ref := s.r.opts.Releases.GraphBaseImage; ref != "" {
		return ref
	}
	return graphimage.DefaultBaseImage
}

// checkGraphBase holds the graph-data image's base image to the rules every
// image the run plans obeys, before any work: a reference with a tag or a
// digest and its registry named, no mirror.blockedImages pattern matching it
// (refused at the pattern's line), its registry not blocked by
// registries.conf. (registries.conf's mirrors apply as to any image: the
// base is read with the run's source registry client.)
func (s *releaseSource) checkGraphBase() error {
	ref := s.graphBaseRef()
	const what = "the graph-data image's base image"
	r, err := oci.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("mirror.platform.graph: %s (--graph-base-image): %w", what, err)
	}
	if conf := s.r.regconf; conf != nil { // nil outside a run
		if err := conf.Qualified(ref); err != nil {
			return fmt.Errorf("mirror.platform.graph: %s %s (--graph-base-image): %w", what, ref, err)
		}
	}
	for _, b := range s.r.cfg.Mirror.BlockedImages {
		if mirror.BlockedMatcher([]string{b.Name})(ref) {
			at := s.r.cfg.Source
			if b.Line > 0 {
				at = fmt.Sprintf("%s:%d", at, b.Line)
			}
			return fmt.Errorf("%s: mirror.blockedImages %q blocks %s %s (mirror.platform.graph: true): give a base image it does not match with --graph-base-image, or remove the pattern", at, b.Name, what, ref)
		}
	}
	if err := s.r.regconf.Blocked(r.Repository()); err != nil {
		return fmt.Errorf("mirror.platform.graph: %s %s: %w; or give another base image with --graph-base-image", what, ref, err)
	}
	return nil
}
