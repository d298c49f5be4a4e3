package archive

import (
	"context"
	"fmt"
	"strings"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// EnsureReliesOn checks that dst already holds every blob this (incremental)
// archive relies on, in every repository that needs it, mounting it from the
// repository the earlier archive put it in when that works. repoFor maps an archive
// repository to the destination's name for it (nil: unchanged). The error wraps
// ErrBaseMissing and names the missing blobs and the earlier archives that had them.
func (r *Reader) EnsureReliesOn(ctx context.Context, dst endpoint.Destination, repoFor func(string) string) error {
	if repoFor == nil {
		repoFor = func(s string) string { return s }
	}
	var missing []string
	byOrigin := map[string]int{}
	for _, b := range r.m.ReliesOn {
		d := endpoint.Descriptor{Digest: b.Digest, Size: b.Size}
		for _, repo := range b.Repos {
			if err := ctx.Err(); err != nil {
				return err
			}
			target := repoFor(repo)
			ok, err := dst.BlobExists(ctx, target, d)
			if err != nil {
				return fmt.Errorf("check blob %s in %s: %w", b.Digest, target, err)
			}
			for _, from := range b.Origin.Repos {
				if ok {
					break
				}
				if ok, err = dst.MountBlob(ctx, target, repoFor(from), d); err != nil {
					return fmt.Errorf("mount blob %s into %s: %w", b.Digest, target, err)
				}
			}
			if !ok {
				missing = append(missing, fmt.Sprintf("%s (needed in %s)", b.Digest, target))
				byOrigin[b.Origin.ArchiveID]++
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return r.notLoadedError(missing, byOrigin)
}

// notLoadedError names the earlier batches whose blobs the destination lacks, in
// the order they must be loaded, and the first missing blobs.
func (r *Reader) notLoadedError(missing []string, byOrigin map[string]int) error {
	this := BatchRef{Batch: r.m.Batch, ArchiveID: r.m.ArchiveID}
	var batches []string
	for _, b := range r.m.BuildsOn {
		if n := byOrigin[b.ArchiveID]; n > 0 {
			batches = append(batches, fmt.Sprintf("%s, written to %s: %d blobs", b, b.Dir, n))
			delete(byOrigin, b.ArchiveID)
		}
	}
	for _, b := range r.m.ReliesOn {
		if n := byOrigin[b.Origin.ArchiveID]; n > 0 {
			batches = append(batches, fmt.Sprintf("%s, written to %s: %d blobs", BatchRef{ArchiveID: b.Origin.ArchiveID}, b.Origin.Archive, n))
			delete(byOrigin, b.Origin.ArchiveID)
		}
	}
	const show = 5
	total, more := len(missing), ""
	if len(missing) > show {
		more = fmt.Sprintf(" and %d more", len(missing)-show)
		missing = missing[:show]
	}
	return fmt.Errorf("%w: %s builds on earlier batches that were not loaded into this registry:\n  %s\nload them first, in this order, then this one (%d blobs missing: %s%s); or build a complete archive with --full", ErrBaseMissing, this, strings.Join(batches, "\n  "), total, strings.Join(missing, ", "), more)
}
