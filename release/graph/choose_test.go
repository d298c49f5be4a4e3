package graph

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

type ch = imageset.ReleaseChannel

// chooseCases run against the test update service: graphs built from
// cincinnati-graph-data (real channels and risks), and oc-mirror's fixtures.
var chooseCases = []struct {
	name     string
	ocmirror bool // use oc-mirror's fixtures
	p        imageset.Platform
	o        ChooseOptions
}{
	{name: "head", p: imageset.Platform{Channels: []ch{{Name: "stable-4.15"}}}},
	{name: "head-shortestpath", p: imageset.Platform{Channels: []ch{{Name: "stable-4.15", ShortestPath: true}}}},
	{name: "full", p: imageset.Platform{Channels: []ch{{Name: "stable-4.15", Full: true}}}},
	{name: "min-only", p: imageset.Platform{Channels: []ch{{Name: "stable-4.16", MinVersion: "4.16.50"}}}},
	{name: "max-only", p: imageset.Platform{Channels: []ch{{Name: "stable-4.15", MaxVersion: "4.14.6"}}}},
	{name: "range", p: imageset.Platform{Channels: []ch{{Name: "stable-4.15", MinVersion: "4.15.0", MaxVersion: "4.15.6"}}}},
	{name: "range-with-risks", p: imageset.Platform{Channels: []ch{{Name: "eus-4.16", MinVersion: "4.16.28", MaxVersion: "4.16.40"}}}},
	{name: "range-across-minors", p: imageset.Platform{Channels: []ch{{Name: "stable-4.16", MinVersion: "4.15.59", MaxVersion: "4.16.3"}}}},
	{name: "shortestpath", p: imageset.Platform{Channels: []ch{{Name: "stable-4.15", MinVersion: "4.15.0", MaxVersion: "4.15.20", ShortestPath: true}}}},
	{name: "err-shortestpath-risky-range", p: imageset.Platform{Channels: []ch{{Name: "eus-4.16", MinVersion: "4.16.28", MaxVersion: "4.16.41", ShortestPath: true}}}},
	{name: "shortestpath-conditional", o: ChooseOptions{AllowConditional: true},
		p: imageset.Platform{Channels: []ch{{Name: "stable-4.15", MinVersion: "4.14.5", MaxVersion: "4.15.2", ShortestPath: true}}}},
	{name: "shortestpath-across-minors", p: imageset.Platform{Channels: []ch{{Name: "eus-4.16", MinVersion: "4.14.10", MaxVersion: "4.16.20", ShortestPath: true}}}},
	{name: "eus-heads", p: imageset.Platform{Channels: []ch{{Name: "eus-4.14", MinVersion: "4.14.70", MaxVersion: "4.14.70"}, {Name: "eus-4.16"}}}},
	{name: "eus-ranges", p: imageset.Platform{Channels: []ch{
		{Name: "eus-4.14", MinVersion: "4.14.38", MaxVersion: "4.14.40"},
		{Name: "eus-4.16", MinVersion: "4.16.28", MaxVersion: "4.16.30"}}}},
	{name: "eus-ranges-conditional", o: ChooseOptions{AllowConditional: true}, p: imageset.Platform{Channels: []ch{
		{Name: "eus-4.14", MinVersion: "4.14.38", MaxVersion: "4.14.40"},
		{Name: "eus-4.16", MinVersion: "4.16.32", MaxVersion: "4.16.33"}}}},
	{name: "err-eus-ranges-unconditional", p: imageset.Platform{Channels: []ch{
		{Name: "eus-4.14", MinVersion: "4.14.38", MaxVersion: "4.14.40"},
		{Name: "eus-4.16", MinVersion: "4.16.32", MaxVersion: "4.16.33"}}}},
	{name: "eus-through-stable", p: imageset.Platform{Channels: []ch{
		{Name: "stable-4.14", MinVersion: "4.14.20", MaxVersion: "4.14.20"},
		{Name: "stable-4.16", MinVersion: "4.16.10", MaxVersion: "4.16.10"}}}},
	{name: "same-minor-channels", p: imageset.Platform{Channels: []ch{{Name: "stable-4.16"}, {Name: "eus-4.16", MinVersion: "4.16.60", MaxVersion: "4.16.60"}}}},
	{name: "architectures", p: imageset.Platform{Architectures: []string{"arm64", "s390x"}, Channels: []ch{{Name: "stable-4.15"}}}},
	{name: "platforms-multi", p: imageset.Platform{Platforms: []imageset.PlatformSpec{{Architecture: "arm64"}}, Channels: []ch{{Name: "eus-4.16"}}}},
	{name: "ocmirror-head", ocmirror: true, p: imageset.Platform{Channels: []ch{{Name: "stable-4.0"}}}},
	{name: "ocmirror-full", ocmirror: true, p: imageset.Platform{Channels: []ch{{Name: "stable-4.0", Full: true}}}},
	{name: "ocmirror-shortestpath", ocmirror: true, p: imageset.Platform{Channels: []ch{{Name: "stable-4.0", MinVersion: "4.0.0-5", MaxVersion: "4.0.0-8", ShortestPath: true}}}},
	{name: "ocmirror-stable-4.15", ocmirror: true, p: imageset.Platform{Channels: []ch{{Name: "stable-4.15", Full: true}}}},

	// Refused.
	{name: "err-min-not-in-channel", o: ChooseOptions{File: "isc.yaml"},
		p: imageset.Platform{Channels: []ch{{Name: "stable-4.15", MinVersion: "4.15.1", MaxVersion: "4.15.99", Line: 7}}}},
	{name: "err-unknown-channel", o: ChooseOptions{Field: "delete.platform"}, p: imageset.Platform{Channels: []ch{{Name: "stable-4.99"}}}},
	{name: "err-eus-head-not-published", p: imageset.Platform{Channels: []ch{{Name: "eus-4.14"}, {Name: "eus-4.16"}}}},
	{name: "err-no-unconditional-path", o: ChooseOptions{File: "isc.yaml"}, p: imageset.Platform{Channels: []ch{{Name: "stable-4.15", MinVersion: "4.14.5", MaxVersion: "4.15.2", ShortestPath: true, Line: 9}}}},
}

func TestChoose(t *testing.T) {
	s := cincinnatitest.New(t)
	for _, tc := range chooseCases {
		t.Run(tc.name, func(t *testing.T) {
			url := s.URL
			if tc.ocmirror {
				url = s.OCMirrorURL
			}
			f := NewClient(ClientOptions{URL: url})
			got, err := Choose(context.Background(), &tc.p, f, tc.o)
			out := describe(t, got, err, tc.ocmirror)
			golden.Check(t, filepath.Join("testdata", "choose", tc.name+".golden"), out)
			if err != nil {
				return
			}
			// Offline, from the graphs saved, the choice is the same.
			again, err := Choose(context.Background(), &tc.p, Offline(got.Graphs), tc.o)
			if err != nil {
				t.Fatalf("offline: %v", err)
			}
			if !bytes.Equal(describe(t, again, nil, tc.ocmirror), out) {
				t.Errorf("offline choice differs from the online one")
			}
		})
	}
}

// describe prints a choice (or its error) for a golden file, checking the
// invariants every choice keeps.
func describe(t *testing.T, c *Chosen, err error, ocmirror bool) []byte {
	t.Helper()
	var b bytes.Buffer
	if err != nil {
		fmt.Fprintf(&b, "error:\n%s\n", err)
		return b.Bytes()
	}
	fmt.Fprintf(&b, "releases: %d\n", len(c.Releases))
	for i, r := range c.Releases {
		fmt.Fprintf(&b, "  %s %s %s\n", r.Arch, r.Version, r.Channel)
		if !ocmirror && r.Payload != cincinnatitest.Payload(r.Version, r.Arch) {
			t.Errorf("%s %s: payload %s is not the node's", r.Arch, r.Version, r.Payload)
		}
		if ocmirror {
			fmt.Fprintf(&b, "    %s\n", r.Payload)
		}
		if i > 0 && c.Releases[i-1].Arch == r.Arch && cmpVersion(c.Releases[i-1].Version, r.Version) >= 0 {
			t.Errorf("releases not sorted or not deduplicated at %s", r.Version)
		}
	}
	fmt.Fprintf(&b, "risks: %d\n", len(c.Risks))
	for _, r := range c.Risks {
		fmt.Fprintf(&b, "  %s -> %s %s %s\n", r.From, r.To, r.Name, r.URL)
		if r.Message == "" {
			t.Errorf("risk %s has no message", r.Name)
		}
	}
	fmt.Fprintf(&b, "warnings: %d\n", len(c.Warnings))
	for _, w := range c.Warnings {
		fmt.Fprintf(&b, "  %s\n", w)
	}
	names := slices.Sorted(maps.Keys(c.Graphs))
	fmt.Fprintf(&b, "graphs: %s\n", strings.Join(names, " "))
	return b.Bytes()
}

func TestChooseNothing(t *testing.T) {
	for _, p := range []*imageset.Platform{nil, {}, {Release: "quay.io/openshift-release-dev/ocp-release:4.16.0-x86_64"}} {
		got, err := Choose(context.Background(), p, Offline(nil), ChooseOptions{})
		if err != nil || len(got.Releases) != 0 || len(got.Graphs) != 0 {
			t.Errorf("Choose(%+v) = %+v, %v; want nothing", p, got, err)
		}
	}
}

func TestOfflineMissing(t *testing.T) {
	_, err := Choose(context.Background(), &imageset.Platform{Channels: []ch{{Name: "fast-4.16", Type: "okd"}}},
		Offline(map[string][]byte{"ocp-amd64-stable-4.16.json": []byte(`{"nodes":[]}`)}), ChooseOptions{})
	want := "update graph okd-amd64-fast-4.16.json (channel fast-4.16, okd, amd64) was not saved by the run that made this archive (it has ocp-amd64-stable-4.16.json)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want it to contain %q", err, want)
	}
}
