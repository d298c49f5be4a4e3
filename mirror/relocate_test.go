package mirror

import (
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
)

// Relocating a mirror-to-disk plan with --max-nested-paths can merge two
// repositories; a tag both would take fails instead of being overwritten.
func TestRelocateMarksConflicts(t *testing.T) {
	p := &Plan{Workflow: MirrorToDisk, Images: []PlanImage{
		{Source: "quay.io/a/b-c:v1", Kind: KindGeneric, Digest: digest.Digest("sha256:" + strings.Repeat("1", 64)), DestRepo: "a/b-c", Tags: []string{"v1"}},
		{Source: "quay.io/a-b/c:v1", Kind: KindGeneric, Digest: digest.Digest("sha256:" + strings.Repeat("2", 64)), DestRepo: "a-b/c", Tags: []string{"v1"}},
	}}
	out, err := p.Relocate("reg.example.com/ns", 2)
	if err != nil {
		t.Fatal(err)
	}
	if out.Images[0].Error != "" || !strings.Contains(out.Images[1].Error, "already the destination of") {
		t.Fatalf("conflict not marked: %+v", out.Images)
	}
}
