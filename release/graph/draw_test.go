package graph

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

// TestDraw draws a shortest path that takes conditional updates, in DOT and
// Mermaid (goldens), and once as SVG.
func TestDraw(t *testing.T) {
	s := cincinnatitest.New(t)
	p := &imageset.Platform{Channels: []ch{{Name: "eus-4.16", MinVersion: "4.16.28", MaxVersion: "4.16.34", ShortestPath: true}}}
	c, err := Choose(context.Background(), p, NewClient(ClientOptions{URL: s.URL}), ChooseOptions{AllowConditional: true})
	if err != nil {
		t.Fatal(err)
	}
	pic, err := Draw(c, TypeOCP, "eus-4.16", "amd64", DrawOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range c.Releases {
		want = append(want, r.Version)
	}
	if got := strings.Join(pic.Chosen(), " "); got != strings.Join(want, " ") || got != "4.16.28 4.16.32 4.16.34" {
		t.Errorf("chosen in the picture: %s; releases %v", got, want)
	}
	for _, f := range []string{FormatDOT, FormatMermaid} {
		var b bytes.Buffer
		if err := pic.Write(context.Background(), &b, f); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "LabeledMachineConfigAndContainerRuntimeConfigBlocksMCO") {
			t.Errorf("%s: the conditional edges' risk is not drawn", f)
		}
		golden.Check(t, filepath.Join("testdata", "draw", "eus-4.16-path."+f), b.Bytes())
	}
	var svg bytes.Buffer
	if err := pic.Write(context.Background(), &svg, FormatSVG); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg.Bytes(), []byte("<svg")) || !bytes.Contains(svg.Bytes(), []byte("4.16.34")) {
		t.Errorf("SVG without the graph: %.200s", svg.String())
	}

	if _, err := Draw(c, TypeOCP, "stable-4.16", "amd64", DrawOptions{}); err == nil || !strings.Contains(err.Error(), "no graph ocp-amd64-stable-4.16.json") {
		t.Errorf("a graph not read: %v", err)
	}
	if _, err := Draw(c, TypeOCP, "eus-4.16", "amd64", DrawOptions{From: "4.16"}); err == nil {
		t.Error("a bound that is not a version is accepted")
	}
}
