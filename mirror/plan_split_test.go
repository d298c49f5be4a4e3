package mirror

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// fixedResolver resolves every tag to the digest of its reference.
type fixedResolver struct{}

func (fixedResolver) Resolve(_ context.Context, ref string) (endpoint.Descriptor, error) {
	return endpoint.Descriptor{Digest: digest.FromString(ref), MediaType: "application/vnd.oci.image.manifest.v1+json"}, nil
}

// Planning the images while the catalogs are rebuilt (PlanImages, then
// AddCatalogs) makes the plan NewPlan makes, conflicts included: the catalog
// keeps a destination an additional image also wants.
func TestPlanImagesThenCatalogsIsNewPlan(t *testing.T) {
	op := "quay.io/ns/op@" + digest.FromString("op").String()
	req := PlanRequest{
		Workflow: MirrorToMirror, Destination: "127.0.0.1:5000/mirror",
		Catalogs: []CatalogRequest{
			{Catalog: "quay.io/ns/index:v1", SourceDigest: digest.FromString("src"), Images: []string{op, "quay.io/ns/rel:2"},
				Rebuilt: &catalogimage.Rebuilt{Digest: digest.FromString("rebuilt"), MediaType: "application/vnd.oci.image.index.v1+json", LayoutDir: "/ws/image"}},
			{Catalog: "quay.io/ns/other:v2", SourceDigest: digest.FromString("other"), SourceRepo: "quay.io/ns/other", Images: []string{op}},
		},
		Images: []ImageRequest{{Name: "quay.io/x/tool:1", Origin: OriginAdditional}, {Name: "quay.io/y/thing:3", Origin: OriginAdditional, TargetRepo: "ns/index", TargetTag: "v1"},
			// Two images wanting the untouched catalog's destination: the one that
			// is the catalog itself (same digest) is no conflict, the other is one.
			{Name: "quay.io/y/thing:4", TargetRepo: "ns/other", TargetTag: "v2"},
			{Name: "quay.io/ns/other@" + digest.FromString("other").String(), TargetRepo: "ns/other", TargetTag: "v2"}},
	}
	want, err := NewPlan(context.Background(), req, fixedResolver{}, 4)
	if err != nil {
		t.Fatal(err)
	}
	split := req
	split.Catalogs = append([]CatalogRequest(nil), req.Catalogs...)
	rebuilt := split.Catalogs[0].Rebuilt
	split.Catalogs[0].Rebuilt = nil // not known while the images are planned
	got, err := PlanImages(context.Background(), split, fixedResolver{}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Catalogs) != 0 || len(got.Images) != 6 {
		t.Fatalf("PlanImages: %d catalogs, %d images; want 0 and 6", len(got.Catalogs), len(got.Images))
	}
	split.Catalogs[0].Rebuilt = rebuilt
	got.AddCatalogs(split)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("split plan\n%+v\nwant\n%+v", got, want)
	}
	if want.Images[0].Kind != KindCatalog || want.Images[0].Error != "" || want.Images[0].Digest != rebuilt.Digest {
		t.Errorf("first image %+v, want the rebuilt catalog, planned", want.Images[0])
	}
	errs := map[string]string{}
	for _, im := range want.Images {
		errs[im.Source] = im.Error
	}
	for src, wantErr := range map[string]string{
		"quay.io/y/thing:3": "already the destination of quay.io/ns/index:v1",
		"quay.io/y/thing:4": "already the destination of quay.io/ns/other:v2",
		"quay.io/ns/other@" + digest.FromString("other").String(): "",
		"quay.io/x/tool:1": "",
	} {
		if got := errs[src]; (wantErr == "") != (got == "") || !strings.Contains(got, wantErr) {
			t.Errorf("%s: error %q, want one with %q", src, got, wantErr)
		}
	}
}
