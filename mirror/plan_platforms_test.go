package mirror

import (
	"context"
	"reflect"
	"testing"
)

// An image's platform subset in the plan and its job: the union of the entries
// that ask for it, every platform as soon as one of them has none.
func TestPlanPlatforms(t *testing.T) {
	const img = "quay.io/ns/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	amd, arm := []string{"linux/amd64"}, []string{"linux/arm64"}
	tests := []struct {
		name       string
		catalogs   bool     // a catalog names the image
		catalog    []string // with these platforms
		additional bool     // additionalImages names it
		addl       []string // with these platforms
		want       []string
	}{
		{"additional image alone", false, nil, true, amd, amd},
		{"catalog alone", true, arm, false, nil, arm},
		{"catalog and additional image", true, amd, true, arm, []string{"linux/amd64", "linux/arm64"}},
		{"one entry without platforms", true, amd, true, nil, nil},
		{"the same platform twice", true, amd, true, amd, amd},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := PlanRequest{Workflow: MirrorToMirror, Destination: "mirror.example.com/ns"}
			if tc.catalogs {
				req.Catalogs = []CatalogRequest{{Catalog: "quay.io/ns/catalog:v1", Images: []string{img}, Platforms: tc.catalog}}
			}
			if tc.additional {
				req.Images = []ImageRequest{{Name: img, Origin: OriginAdditional, Platforms: tc.addl}}
			}
			p, err := PlanImages(context.Background(), req, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Images) != 1 {
				t.Fatalf("%d images planned", len(p.Images))
			}
			if got := p.Images[0].Platforms; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan platforms %v, want %v", got, tc.want)
			}
			if got := p.Jobs()[0].Platforms; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("job platforms %v, want %v", got, tc.want)
			}
		})
	}
}
