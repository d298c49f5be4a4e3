package mirror

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"
)

// TestVerify: the verifier judges each catalog's source and each operator and
// additional image (not attachments, not images already failed, nothing from
// an OCI layout); a refused image fails with the reason, a refused catalog
// fails the whole call.
func TestVerify(t *testing.T) {
	d := func(s string) digest.Digest { return digest.FromString(s) }
	images := func() []PlanImage {
		return []PlanImage{
			{Source: "quay.io/ns/op@" + d("op").String(), Kind: KindOperator, SourceRepo: "quay.io/ns/op", Digest: d("op")},
			{Source: "quay.io/ns/bad@" + d("bad").String(), Kind: KindOperator, SourceRepo: "quay.io/ns/bad", Digest: d("bad")},
			{Source: "example.com/extra:1", Kind: KindGeneric, SourceRepo: "example.com/extra", Digest: d("extra")},
			{Source: "example.com/gone:1", Kind: KindGeneric, SourceRepo: "example.com/gone", Error: "not found"},
			{Source: "oci:///layout", Kind: KindGeneric, SourceRepo: LayoutRepoPrefix + "/layout", Digest: d("layout")},
			{Source: "quay.io/ns/op@" + d("sig").String(), Kind: KindAttachment, SourceRepo: "quay.io/ns/op", Digest: d("sig")},
		}
	}
	cats := []CatalogRequest{
		{Catalog: "registry.example.com/cat:v1", SourceDigest: d("cat")},
		{Catalog: "oci:///catalog", SourceDigest: d("ocicat"), SourceRepo: LayoutRepoPrefix + "/catalog"},
		{Catalog: "oci:///rebuilt", SourceDigest: d("rebuilt")},
		{Catalog: "/a/folder"},
	}
	for _, tc := range []struct {
		name    string
		refuse  string // repo the verifier refuses
		wantErr string
		failed  []string
	}{
		{"all accepted", "", "", nil},
		{"an image refused", "quay.io/ns/bad", "", []string{"quay.io/ns/bad@" + d("bad").String()}},
		{"the catalog refused", "registry.example.com/cat", "catalog: registry.example.com/cat@" + d("cat").String() + " refused", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var asked []string
			v := func(_ context.Context, repo string, dg digest.Digest) error {
				mu.Lock()
				asked = append(asked, repo+"@"+dg.Encoded()[:6])
				mu.Unlock()
				if repo == tc.refuse {
					return fmt.Errorf("%s@%s refused by the test", repo, dg)
				}
				return nil
			}
			p := &Plan{Images: images()}
			err := p.Verify(context.Background(), v, cats, 2)
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			sort.Strings(asked)
			want := []string{"example.com/extra@" + d("extra").Encoded()[:6], "quay.io/ns/bad@" + d("bad").Encoded()[:6], "quay.io/ns/op@" + d("op").Encoded()[:6], "registry.example.com/cat@" + d("cat").Encoded()[:6]}
			sort.Strings(want)
			if fmt.Sprint(asked) != fmt.Sprint(want) {
				t.Errorf("judged %v, want %v", asked, want)
			}
			var failed []string
			for _, im := range p.Images {
				if im.Error != "" && im.Error != "not found" {
					failed = append(failed, im.Source)
					if !strings.Contains(im.Error, "refused by the test") {
						t.Errorf("%s: %s", im.Source, im.Error)
					}
				}
			}
			if tc.wantErr == "" && fmt.Sprint(failed) != fmt.Sprint(tc.failed) {
				t.Errorf("failed %v, want %v", failed, tc.failed)
			}
		})
	}
	// An interrupted run says so, not that images were refused.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := &Plan{Images: images()}
	if err := p.Verify(ctx, func(ctx context.Context, _ string, _ digest.Digest) error { return ctx.Err() }, nil, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
