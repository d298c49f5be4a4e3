package transfer

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
)

// recordOf is the record a run of jobs leaves (Options.Recorded): every tag of
// every job at its digest.
func recordOf(jobs []Job) map[string]map[string]digest.Digest {
	rec := map[string]map[string]digest.Digest{}
	for _, j := range jobs {
		if rec[j.Dest] == nil {
			rec[j.Dest] = map[string]digest.Digest{}
		}
		for _, t := range j.Tags {
			rec[j.Dest][t] = j.Digest
		}
	}
	return rec
}

// pinnedWorkload mirrors 4 repositories of 6 images each, tagged at the
// destination by their digest-derived tags (as pinned catalog images are),
// one image in six a two-arch index, plus a repository holding one pinned
// image and one image tagged by name ("v1"). It returns the jobs after a
// first run.
func pinnedWorkload(t *testing.T, src, dst *registrytest.Registry) (pinned []Job, single, named Job) {
	t.Helper()
	imgs := pushImages(t, src.Host(), 24, 4, func(i int) fakeimage.Spec {
		s := fakeimage.Spec{Seed: uint64(900 + i), BaseSeed: uint64(i % 2), BaseLayers: 1, Layers: 1, LayerSize: 256}
		if i%6 == 5 {
			s.Platforms = []string{"linux/amd64", "linux/arm64"}
		}
		return s
	})
	pinned = jobsFor(imgs, src.Host(), dst.Host())
	for i := range pinned {
		pinned[i].Tags = []string{oci.DigestTag(pinned[i].Digest)}
	}
	alone := jobsFor(pushImages(t, src.Host()+"/alone", 2, 1, func(i int) fakeimage.Spec {
		return fakeimage.Spec{Seed: uint64(950 + i), Layers: 1, LayerSize: 256}
	}), src.Host(), dst.Host())
	single, named = alone[0], alone[1]
	single.Tags = []string{oci.DigestTag(single.Digest)}
	named.Tags = []string{"v1"}
	all := append(append([]Job(nil), pinned...), single, named)
	if _, err := Copy(context.Background(), testRegistry(), testRegistry(), all, Options{Retry: mirrortest.FastRetry}); err != nil {
		t.Fatal(err)
	}
	checkDest(t, all)
	return pinned, single, named
}

// A re-run with the last run's record asks one tag listing per repository of
// pinned images instead of a manifest request per image; a repository with a
// single pinned image and an image tagged by name keep their HEAD; without
// the record (--check-every-image) every image gets its HEAD again.
func TestRerunListsTagsOncePerRepository(t *testing.T) {
	ctx := context.Background()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	pinned, single, named := pinnedWorkload(t, src, dst)
	jobs := append(append([]Job(nil), pinned...), single, named)
	for _, tc := range []struct {
		name         string
		rec          map[string]map[string]digest.Digest
		measure      bool // Measure first, as the progress bar does without a prefetch (WithRecord)
		lists, heads int64
	}{
		{"record", recordOf(jobs), false, 4, 2},
		{"record, measure", recordOf(jobs), true, 4, 2},
		{"no record", nil, false, 0, int64(len(jobs))},
		{"no record, measure", nil, true, 0, int64(len(jobs))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src.Reset()
			dst.Reset()
			reg := testRegistry()
			opts := Options{Retry: mirrortest.FastRetry, ParallelImages: 4, Recorded: tc.rec}
			if tc.measure {
				s, err := Measure(ctx, reg, WithRecord(reg, tc.rec), jobs, 16, nil)
				if err != nil {
					t.Fatal(err)
				}
				opts.Held = s.Held
			}
			rep, err := Copy(ctx, reg, reg, jobs, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range rep.Images {
				if im.Status != StatusSkipped {
					t.Errorf("%s: %s, want skipped", im.Job.Key(), im.Status)
				}
			}
			c := dst.Counts()
			if got := c.ByPath["GET tags"]; got != tc.lists {
				t.Errorf("%d tag listings, want %d (%v)", got, tc.lists, c.ByPath)
			}
			if c.ManifestHEAD != tc.heads || c.ManifestGET != 0 {
				t.Errorf("%d manifest HEADs and %d GETs, want %d and none (%v)", c.ManifestHEAD, c.ManifestGET, tc.heads, c.ByPath)
			}
			if n := requestsBeyondBase(c); n != tc.lists+tc.heads {
				t.Errorf("%d destination requests, want %d (%v)", n, tc.lists+tc.heads, c.ByPath)
			}
			if n := requestsBeyondBase(src.Counts()); n != 0 {
				t.Errorf("%d source requests (%v), want none", n, src.Counts().ByPath)
			}
		})
	}
}

// What changed in the mirror since the last run is found by a re-run that
// trusts the record: an image whose manifest was deleted (its tags with it)
// is copied again, one whose digest-derived tag alone was deleted gets it
// back, and a name tag moved to another manifest is put back.
func TestRerunFindsWhatChangedInTheMirror(t *testing.T) {
	ctx := context.Background()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	pinned, single, named := pinnedWorkload(t, src, dst)
	jobs := append(append([]Job(nil), pinned...), single, named)
	rec := recordOf(jobs)
	reg := testRegistry()
	gone, untagged := pinned[0], pinned[5] // an image and an index
	if ok, err := reg.DeleteManifest(ctx, gone.Dest, gone.Digest); err != nil || !ok {
		t.Fatalf("delete %s: %v, %v", gone.Key(), ok, err)
	}
	if ok, err := reg.DeleteTag(ctx, untagged.Dest, untagged.Tags[0]); err != nil || !ok {
		t.Fatalf("delete tag of %s: %v, %v", untagged.Key(), ok, err)
	}
	other, err := reg.Manifest(ctx, single.Dest, single.Digest.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.PutManifest(ctx, named.Dest, "v1", other); err != nil {
		t.Fatal(err)
	}
	dst.Reset()
	rep, err := Copy(ctx, testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry, ParallelImages: 4, Recorded: rec})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{gone.Key(): StatusCopied, untagged.Key(): StatusCopied, named.Key(): StatusCopied}
	for _, im := range rep.Images {
		w := want[im.Job.Key()]
		if w == "" {
			w = StatusSkipped
		}
		if im.Status != w {
			t.Errorf("%s: %s, want %s", im.Job.Key(), im.Status, w)
		}
	}
	checkDest(t, jobs)
	for _, j := range []Job{gone, untagged, named} {
		ok, err := reg.ManifestExists(ctx, j.Dest, j.Tags[0], j.Digest)
		if err != nil || !ok {
			t.Errorf("%s:%s does not name %s after the re-run (%v)", j.Dest, j.Tags[0], j.Digest, err)
		}
	}
	if c := dst.Counts(); c.ByPath["GET tags"] != 4 {
		t.Errorf("%d tag listings, want one per repository of pinned images (%v)", c.ByPath["GET tags"], c.ByPath)
	}
}

// unreliableLister is the destination's registry client whose tag listings
// fail, or stop after the first tag as a listing cut short would.
type unreliableLister struct {
	*registry.Client
	short bool
}

func (u unreliableLister) TagsUpTo(ctx context.Context, repo string, pages int) ([]string, bool, error) {
	if !u.short {
		return nil, false, errors.New("tags/list: 500 Internal Server Error")
	}
	tags, _, err := u.Client.TagsUpTo(ctx, repo, pages)
	return tags[:min(1, len(tags))], false, err
}

// A listing that fails, or is cut short before an image's tag, proves
// nothing: the images it does not answer for are asked about with a HEAD, as
// without a record, and nothing is copied again.
func TestRerunAsksWhenTheListingFails(t *testing.T) {
	ctx := context.Background()
	src, dst := registrytest.Start(t), registrytest.Start(t)
	pinned, single, named := pinnedWorkload(t, src, dst)
	jobs := append(append([]Job(nil), pinned...), single, named)
	for _, short := range []bool{false, true} {
		t.Run(fmt.Sprintf("cut short %v", short), func(t *testing.T) {
			src.Reset()
			dst.Reset()
			reg := testRegistry()
			rep, err := Copy(ctx, reg, unreliableLister{reg, short}, jobs, Options{Retry: mirrortest.FastRetry, ParallelImages: 4, Recorded: recordOf(jobs)})
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range rep.Images {
				if im.Status != StatusSkipped {
					t.Errorf("%s: %s, want skipped", im.Job.Key(), im.Status)
				}
			}
			c := dst.Counts()
			// Cut short, each of the 4 listings answers for the one tag it shows.
			want := int64(len(jobs))
			if short {
				want -= 4
			}
			if c.ManifestHEAD != want {
				t.Errorf("%d manifest HEADs, want %d (%v)", c.ManifestHEAD, want, c.ByPath)
			}
			if c.Committed()+c.ManifestPUT != 0 || requestsBeyondBase(src.Counts()) != 0 {
				t.Errorf("something was copied again: destination %v, source %v", c.ByPath, src.Counts().ByPath)
			}
		})
	}
}
