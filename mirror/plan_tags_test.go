package mirror

import (
	"context"
	"slices"
	"testing"

	"github.com/opencontainers/go-digest"
)

// A reference requested several times with one kind and different target
// tags in the same repository (a component two releases share) is planned
// once with every tag; a request of another kind or repository adds none.
func TestPlanOneImageSeveralTags(t *testing.T) {
	comp := "quay.io/art/dev@" + digest.FromString("comp").String()
	req := PlanRequest{
		Workflow: MirrorToMirror, Destination: "127.0.0.1:5000/mirror",
		Images: []ImageRequest{
			{Name: comp, Kind: "release", Origin: "platform:4.15.1/amd64", TargetRepo: "openshift/release", TargetTag: "4.15.1-x86_64-a"},
			{Name: comp, Kind: "release", Origin: "platform:4.15.2/amd64", TargetRepo: "openshift/release", TargetTag: "4.15.2-x86_64-a"},
			{Name: comp, Kind: "release", Origin: "platform:4.15.3/amd64", TargetRepo: "elsewhere", TargetTag: "4.15.3-x86_64-a"},
			{Name: comp, Kind: KindGeneric, Origin: OriginAdditional, TargetRepo: "openshift/release", TargetTag: "mine"},
			{Name: comp, Kind: "release", Origin: "platform:4.15.2/amd64", TargetRepo: "openshift/release", TargetTag: "4.15.2-x86_64-a"},
		},
	}
	p, err := NewPlan(context.Background(), req, fixedResolver{}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Images) != 1 {
		t.Fatalf("%d images planned, want 1", len(p.Images))
	}
	im := p.Images[0]
	// The last target of the kind sets the repository, as before; the tags
	// of the others in that repository are added, once each.
	if im.DestRepo != "127.0.0.1:5000/mirror/openshift/release" || !slices.Equal(im.Tags, []string{"4.15.2-x86_64-a", "4.15.1-x86_64-a"}) {
		t.Errorf("planned at %s with tags %v, want openshift/release with both releases' tags only", im.DestRepo, im.Tags)
	}
	if len(im.Origins) != 4 {
		t.Errorf("origins %v", im.Origins)
	}
}
