package pipeline

import (
	"testing"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/workspace"
)

// Which recorded releases a delete.platform stanza names.
func TestReleaseDeletes(t *testing.T) {
	const payload = "quay.io/openshift-release-dev/ocp-release:4.15.2-x86_64"
	const pinned = "quay.io/openshift-release-dev/ocp-release@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	w := workspace.Want{Kind: workspace.WantRelease, Version: "4.15.2", Arch: "amd64", Image: payload, Channels: []string{"stable-4.15"}}
	byDigest := w
	byDigest.Image = pinned
	ch := func(name, min, max string) *imageset.Platform {
		return &imageset.Platform{Channels: []imageset.ReleaseChannel{{Name: name, MinVersion: min, MaxVersion: max}}}
	}
	for _, tc := range []struct {
		name     string
		platform *imageset.Platform
		want     workspace.Want
		names    bool
	}{
		{"no platform stanza", nil, w, false},
		{"the release by its reference", &imageset.Platform{Release: payload}, w, true},
		{"another release", &imageset.Platform{Release: "quay.io/openshift-release-dev/ocp-release:4.15.3-x86_64"}, w, false},
		{"the release by digest", &imageset.Platform{Release: pinned}, byDigest, true},
		{"the channel without bounds", ch("stable-4.15", "", ""), w, true},
		{"within the bounds", ch("stable-4.15", "4.15.1", "4.15.2"), w, true},
		{"below minVersion", ch("stable-4.15", "4.15.3", ""), w, false},
		{"above maxVersion", ch("stable-4.15", "", "4.15.1"), w, false},
		{"another channel", ch("fast-4.15", "", ""), w, false},
		{"another architecture", &imageset.Platform{Architectures: []string{"arm64"}, Channels: ch("stable-4.15", "", "").Channels}, w, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &imageset.DeleteImageSetConfiguration{Delete: imageset.DeleteImageSetConfigurationSpec{Platform: tc.platform}}
			names, ok := (&releaseSource{}).Deletes(cfg, tc.want)
			if !ok || names != tc.names {
				t.Errorf("Deletes = %v, %v; want %v, true", names, ok, tc.names)
			}
		})
	}
	// The graph-data image is its own kind: only graph: true names it,
	// whatever releases the stanza names; so is its record by earlier
	// versions (a release want).
	oldGraph := workspace.Want{Kind: workspace.WantRelease, Version: "graph-data", Image: graphImageName}
	for _, tc := range []struct {
		name     string
		platform *imageset.Platform
		want     workspace.Want
		names    bool
	}{
		{"graph: true", &imageset.Platform{Graph: true, Channels: ch("stable-4.15", "", "").Channels}, graphWant(), true},
		{"the releases, not the graph", ch("stable-4.15", "", ""), graphWant(), false},
		{"graph: true with release:", &imageset.Platform{Graph: true, Release: payload}, graphWant(), true},
		{"no platform stanza", nil, graphWant(), false},
		{"an earlier record, graph: true", &imageset.Platform{Graph: true, Release: payload}, oldGraph, true},
		{"an earlier record, releases only", &imageset.Platform{Release: payload}, oldGraph, false},
		{"a release, graph: true only", &imageset.Platform{Graph: true, Release: "quay.io/openshift-release-dev/ocp-release:4.15.3-x86_64"}, w, false},
	} {
		t.Run("graph image: "+tc.name, func(t *testing.T) {
			cfg := &imageset.DeleteImageSetConfiguration{Delete: imageset.DeleteImageSetConfigurationSpec{Platform: tc.platform}}
			names, ok := (&releaseSource{}).Deletes(cfg, tc.want)
			if !ok || names != tc.names {
				t.Errorf("Deletes = %v, %v; want %v, true", names, ok, tc.names)
			}
		})
	}
	if _, ok := (&releaseSource{}).Deletes(&imageset.DeleteImageSetConfiguration{}, workspace.Want{Kind: workspace.WantAdditional}); ok {
		t.Error("the release source answers for another kind's want")
	}
}
