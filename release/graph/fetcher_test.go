package graph

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/airlock-mirror/airlock/imageset"
)

// recording is an in-memory Fetcher that records what it is asked.
type recording struct {
	graphs map[string]string // by channel
	asked  []string
}

func (r *recording) Fetch(_ context.Context, typ, channel, arch string) ([]byte, error) {
	r.asked = append(r.asked, typ+" "+channel+" "+arch)
	g, ok := r.graphs[channel]
	if !ok {
		return nil, fmt.Errorf("no channel %s", channel)
	}
	return []byte(g), nil
}

// TestChooseTypes: each channel's graph is asked with its type and each
// architecture, saved under its own name; channels of different types are
// not joined; a conditional edge naming a version the graph lacks is ignored.
func TestChooseTypes(t *testing.T) {
	f := &recording{graphs: map[string]string{
		"stable-4": `{"nodes":[{"version":"4.15.0-okd","payload":"okd@sha256:1"},{"version":"4.16.0-okd","payload":"okd@sha256:2"}],"edges":[[0,1]]}`,
		"stable-4.16": `{"nodes":[{"version":"4.16.1","payload":"ocp@sha256:1"},{"version":"4.16.2","payload":"ocp@sha256:2"}],"edges":[],
			"conditionalEdges":[{"edges":[{"from":"4.16.1","to":"4.16.2"},{"from":"4.16.0","to":"4.16.2"}],"risks":[{"name":"R","message":"m","url":"u"}]}]}`,
	}}
	p := &imageset.Platform{Architectures: []string{"amd64", "arm64"}, Channels: []imageset.ReleaseChannel{
		{Name: "stable-4", Type: "okd", Full: true}, {Name: "stable-4.16", Full: true}}}
	c, err := Choose(context.Background(), p, f, ChooseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantAsked := []string{"okd stable-4 amd64", "ocp stable-4.16 amd64", "okd stable-4 arm64", "ocp stable-4.16 arm64"}
	if !slices.Equal(f.asked, wantAsked) {
		t.Errorf("asked %q, want %q", f.asked, wantAsked)
	}
	var files []string
	for k := range c.Graphs {
		files = append(files, k)
	}
	slices.Sort(files)
	if want := []string{"ocp-amd64-stable-4.16.json", "ocp-arm64-stable-4.16.json", "okd-amd64-stable-4.json", "okd-arm64-stable-4.json"}; !slices.Equal(files, want) {
		t.Errorf("graphs %q, want %q", files, want)
	}
	if len(c.Releases) != 8 || len(c.Warnings) != 0 {
		t.Errorf("releases %v, warnings %q: want 4 per architecture, no join across types", c.Releases, c.Warnings)
	}
	if len(c.Risks) != 1 || c.Risks[0] != (Risk{From: "4.16.1", To: "4.16.2", Name: "R", Message: "m", URL: "u"}) {
		t.Errorf("risks %+v: want the one between chosen versions, once", c.Risks)
	}
}

// TestChooseJoinThroughIntermediate: when the configured channels hold no
// path, the channel of the minor in between is read and its release added.
func TestChooseJoinThroughIntermediate(t *testing.T) {
	f := &recording{graphs: map[string]string{
		"eus-5.0":    `{"nodes":[{"version":"5.0.1","payload":"p@sha256:1"}],"edges":[]}`,
		"eus-5.2":    `{"nodes":[{"version":"5.2.0","payload":"p@sha256:3"}],"edges":[]}`,
		"stable-5.1": `{"nodes":[{"version":"5.0.1","payload":"p@sha256:1"},{"version":"5.1.4","payload":"p@sha256:2"},{"version":"5.2.0","payload":"p@sha256:3"}],"edges":[[0,1],[1,2]]}`,
	}}
	p := &imageset.Platform{Channels: []imageset.ReleaseChannel{{Name: "eus-5.0"}, {Name: "eus-5.2"}, {Name: "stable-5.2", MinVersion: "5.2.0", MaxVersion: "5.2.0"}}}
	f.graphs["stable-5.2"] = f.graphs["eus-5.2"]
	c, err := Choose(context.Background(), p, f, ChooseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range c.Releases {
		got = append(got, r.Version+"@"+r.Channel)
	}
	if want := []string{"5.0.1@eus-5.0", "5.1.4@stable-5.1", "5.2.0@eus-5.2"}; !slices.Equal(got, want) {
		t.Errorf("releases %q, want %q", got, want)
	}
	if !slices.Contains(f.asked, "ocp eus-5.1 amd64") || !slices.Contains(f.asked, "ocp stable-5.1 amd64") {
		t.Errorf("asked %q: want the channels of 5.1 for each prefix", f.asked)
	}
	if _, ok := c.Graphs["ocp-amd64-stable-5.1.json"]; !ok {
		t.Error("the intermediate graph is not saved for offline runs")
	}
	if _, err := Choose(context.Background(), p, Offline(c.Graphs), ChooseOptions{}); err != nil {
		t.Errorf("offline: %v", err)
	}
}
