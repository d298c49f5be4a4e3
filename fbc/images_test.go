package fbc

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestImages(t *testing.T) {
	c := &Catalog{Packages: []*Package{
		{Name: "b", Bundles: []*Bundle{{
			Name: "b.v1", Package: "b", Image: "quay.io/x/b-bundle:v1",
			RelatedImages: []RelatedImage{
				{Name: "", Image: "quay.io/x/b-bundle:v1"},
				{Name: "operator", Image: "quay.io/x/op@sha256:" + strings.Repeat("1", 64)},
				{Name: "empty", Image: ""},
				{Name: "pause", Image: "quay.io/noobaa/pause"},
				{Name: "port", Image: "localhost:5000/ns/img"},
			},
		}}},
		{Name: "a", Bundles: []*Bundle{
			{
				Name: "a.v1", Package: "a", Image: "quay.io/x/a-bundle:v1",
				RelatedImages: []RelatedImage{{Name: "op", Image: "quay.io/x/op@sha256:" + strings.Repeat("1", 64)}},
			},
			{
				// Inlined objects, no image: allowed by opm, nothing to mirror.
				Name: "a.v0", Package: "a",
				Properties: []Property{{Type: PropertyBundleObject, Value: []byte(`{"data":""}`)}},
			},
			{Name: "a.v2", Package: "a"},
		}},
	}}
	got, warns := Images(c)
	want := []ImageUse{
		{Image: "localhost:5000/ns/img:latest", Bundles: []BundleRef{{"b", "b.v1"}}, Names: []string{"port"}},
		{Image: "quay.io/noobaa/pause:latest", Bundles: []BundleRef{{"b", "b.v1"}}, Names: []string{"pause"}},
		{Image: "quay.io/x/a-bundle:v1", Bundles: []BundleRef{{"a", "a.v1"}}},
		{Image: "quay.io/x/b-bundle:v1", Bundles: []BundleRef{{"b", "b.v1"}}},
		{Image: "quay.io/x/op@sha256:" + strings.Repeat("1", 64), Bundles: []BundleRef{{"a", "a.v1"}, {"b", "b.v1"}}, Names: []string{"op", "operator"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Images:\n got %+v\nwant %+v", got, want)
	}
	wantWarns := []string{
		`package "b" bundle "b.v1": relatedImages[2].image is empty: skipped`,
		`package "b" bundle "b.v1": relatedImages[3].image "quay.io/noobaa/pause" has neither tag nor digest: using quay.io/noobaa/pause:latest`,
		`package "b" bundle "b.v1": relatedImages[4].image "localhost:5000/ns/img" has neither tag nor digest: using localhost:5000/ns/img:latest`,
		`package "a" bundle "a.v2": image is empty: skipped`,
	}
	slices.Sort(warns)
	slices.Sort(wantWarns)
	if !slices.Equal(warns, wantWarns) {
		t.Errorf("warnings:\n got %q\nwant %q", warns, wantWarns)
	}
}

func TestHasTagOrDigest(t *testing.T) {
	for ref, want := range map[string]bool{
		"quay.io/a/b":                           false,
		"quay.io/a/b:v1":                        true,
		"quay.io:443/a/b":                       false,
		"quay.io:443/a/b:1":                     true,
		"a/b@sha256:" + strings.Repeat("0", 64): true,
		"centos/postgresql-10-centos7":          false,
		"busybox":                               false,
		"busybox:1":                             true,
	} {
		if got := hasTagOrDigest(ref); got != want {
			t.Errorf("hasTagOrDigest(%q) = %v, want %v", ref, got, want)
		}
	}
}
