package fakeimage

import "testing"

// The same Spec gives the same digests; another seed another image; an index
// holds one image per platform, sharing the base layers.
func TestDeterministic(t *testing.T) {
	spec := Spec{Seed: 7, BaseSeed: 1, BaseLayers: 1, Layers: 2, LayerSize: 100}
	a, err := Image(spec, "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Image(spec, "")
	c, _ := Image(Spec{Seed: 8, BaseSeed: 1, BaseLayers: 1, Layers: 2, LayerSize: 100}, "")
	da, _ := a.Digest()
	db, _ := b.Digest()
	dc, _ := c.Digest()
	if da != db || da == dc {
		t.Fatalf("digests %s, %s (same spec), %s (other seed)", da, db, dc)
	}
	la, _ := a.Layers()
	lc, _ := c.Layers()
	ba, _ := la[0].Digest()
	bc, _ := lc[0].Digest()
	if len(la) != 3 || ba != bc {
		t.Errorf("%d layers; base layers %s and %s should be shared", len(la), ba, bc)
	}
	spec.Platforms = []string{"linux/amd64", "linux/arm64"}
	idx, err := Index(spec)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 2 || im.Manifests[1].Platform.Architecture != "arm64" {
		t.Fatalf("index: %v, %+v", err, im)
	}
	if _, err := Index(Spec{Seed: 1}); err == nil {
		t.Error("an index without platforms was built")
	}
}
