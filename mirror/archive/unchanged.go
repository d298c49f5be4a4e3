package archive

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// Unchanged returns the newest archive recorded in the state when it already
// carries exactly these images (the same manifests, destinations and tags) and
// catalogs (the same rebuilt digests and tags), and when covers accepts the
// configuration it was made with (nil accepts any): a new batch would carry
// nothing new that disk-to-mirror could tell apart. It returns nil when they
// differ, when nothing was recorded, or when that archive is no longer where it
// was written (nothing can be compared: the next batch is written).
func (s *State) Unchanged(images []ImageRecord, catalogs []CatalogRecord, covers func(config json.RawMessage) bool) (*BatchRef, error) {
	if len(s.Archives) == 0 {
		return nil, nil
	}
	last := s.Archives[len(s.Archives)-1]
	if _, err := os.Stat(last.Dir); err != nil {
		return nil, nil
	}
	r, err := Open(last.Dir)
	if err != nil {
		return nil, nil // the next batch is written; verify says what is wrong with this one
	}
	defer r.Close()
	m := r.ArchiveManifest()
	if m.ArchiveID != last.ID || !sameKeys(m.Images, images, imageKey) || !sameKeys(m.Catalogs, catalogs, catalogKey) {
		return nil, nil
	}
	if covers != nil && !covers(m.Config) {
		return nil, nil
	}
	return &BatchRef{Batch: m.Batch, ArchiveID: m.ArchiveID, Dir: last.Dir}, nil
}

func imageKey(im ImageRecord) string {
	tags := slices.Clone(im.Tags)
	slices.Sort(tags)
	return strings.Join([]string{im.Source, im.Digest.String(), im.Destination, strings.Join(tags, ","), strings.Join(im.Platforms, ",")}, "\x00")
}

func catalogKey(c CatalogRecord) string {
	return strings.Join([]string{c.Source, c.Digest.String(), c.Destination, c.Tag}, "\x00")
}

func sameKeys[T any](a, b []T, key func(T) string) bool {
	if len(a) != len(b) {
		return false
	}
	ka := make([]string, 0, len(a))
	kb := make([]string, 0, len(b))
	for i := range a {
		ka = append(ka, key(a[i]))
		kb = append(kb, key(b[i]))
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return slices.Equal(ka, kb)
}

// CatalogsAt reports whether dst holds every catalog m pushed, at its tag and
// with the digest m recorded (false for an archive without catalogs): the
// destination then holds m's catalogs, loaded from m or from a batch that
// pushed the same ones. repoFor maps an archive repository to the
// destination's name for it.
func (m *Manifest) CatalogsAt(ctx context.Context, dst endpoint.Destination, repoFor func(string) string) (bool, error) {
	if len(m.Catalogs) == 0 {
		return false, nil
	}
	for _, c := range m.Catalogs {
		if c.Digest == "" || c.Tag == "" {
			return false, nil
		}
		if ok, err := dst.ManifestExists(ctx, repoFor(c.Destination), c.Tag, c.Digest); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}
