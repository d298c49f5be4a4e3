// Package reporttest builds the record of a mirror run (report.Run) shaped
// like the bench's scale workload, without running anything: several
// catalogs mirrored heads only (each package a channel head and its images),
// a release of many components, images spread over repositories, a few
// failures. The report's tests and the bench's report rows write report.html
// from it at any number of images in a fraction of a second, where seeding
// and mirroring the workload takes minutes.
//
// Test support only: the binary never links it (internal/depcheck).
package reporttest

import (
	"fmt"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/prune"
	"github.com/airlock-mirror/airlock/report"
)

// Shape is how many of each thing the run has.
type Shape struct {
	// Images are the catalogs' images (bundles and related images).
	Images int
	// Catalogs hold Packages in all, each with one kept bundle (heads
	// only), whose images are the catalog images spread evenly.
	Catalogs, Packages int
	// Repos are the destination repositories the catalog images go to.
	Repos int
	// ReleaseComponents are the release's component images (its payload
	// is one more image).
	ReleaseComponents int
	// FailEvery makes one image in FailEvery fail (0: none).
	FailEvery int
}

// ScaleShape is the shape of the bench's scale section at about n images
// (bench.ScaleWorkload with bench.ScaleRelease): four catalogs of n/10
// packages in all, a 160-component release, repositories about 35% of the
// images (7,006 for 20,157 images in the bench's sitting), one image in 997
// failed so that the failures table is not empty.
func ScaleShape(n int) Shape {
	return Shape{Images: n, Catalogs: 4, Packages: max(4, n/10), Repos: max(1, n*7/20), ReleaseComponents: 160, FailEvery: 997}
}

// Run is the record of a mirror-to-mirror run of shape s: sorted, every
// list in the order the pipeline saves it. The same shape gives the same run.
func Run(s Shape) *report.Run {
	const src, dst = "127.0.0.1:5790/scale", "127.0.0.1:41000/mirror/scale"
	r := &report.Run{Workflow: "mirror-to-mirror", Destination: "docker://127.0.0.1:41000/mirror", ConfigPath: "isc.yaml",
		Duration: time.Duration(s.Images) * 2 * time.Millisecond,
		Stages: []report.Stage{{Name: "preflight", Duration: 20 * time.Millisecond}, {Name: "catalogs", Duration: time.Second},
			{Name: "plan", Duration: 2 * time.Second}, {Name: "copy", Duration: time.Duration(s.Images) * time.Millisecond}}}
	cfg := "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  platform:\n    channels:\n    - name: stable-4.15\n      minVersion: 4.15.1\n      maxVersion: 4.15.1\n  operators:\n"
	for c := 0; c < s.Catalogs; c++ {
		cat := &report.Catalog{Source: fmt.Sprintf("%s/catalog-%d:v4.15", src, c), Rebuilt: true,
			SourceDigest: digest("catalog-src", c), Digest: digest("catalog", c), Destination: fmt.Sprintf("%s/catalog-%d:v4.15", dst, c)}
		cfg += "  - catalog: " + cat.Source + "\n"
		r.Catalogs = append(r.Catalogs, cat)
	}
	r.Config = cfg
	if s.Catalogs > 0 {
		for p := 0; p < s.Packages; p++ {
			cat := r.Catalogs[p%s.Catalogs]
			name := fmt.Sprintf("operator-%05d", p)
			head := fmt.Sprintf("%s.v1.0.2", name)
			pkg := &report.Package{Name: name, DefaultChannel: "stable",
				Channels: []prune.ChannelExplanation{{Name: "stable", Entries: []string{head}}},
				Bundles:  []prune.BundleExplanation{{Name: head, Version: "1.0.2", Reasons: []prune.Reason{{Kind: prune.ReasonHead, Channel: "stable"}}}}}
			if s.Packages <= maxGraphs*s.Catalogs {
				pkg.Graph = channelPicture(name)
			}
			cat.Packages = append(cat.Packages, pkg)
		}
	}
	for i := 0; i < s.Images; i++ {
		ri := i % max(1, s.Repos)
		repo := fmt.Sprintf("ns-%03d/repo-%05d", ri/20, ri)
		im := image(fmt.Sprintf("%s/%s", src, repo), fmt.Sprintf("%s/%s", dst, repo), "operator", digest("image", i), i, s.FailEvery)
		if s.Catalogs > 0 && s.Packages > 0 {
			c := r.Catalogs[(i%s.Packages)%s.Catalogs]
			pkg := c.Packages[(i%s.Packages)/s.Catalogs]
			pkg.Images = append(pkg.Images, im.Source)
			im.Origins = []string{c.Source}
		}
		r.Images = append(r.Images, im)
	}
	if s.ReleaseComponents > 0 {
		r.Sources = []string{fmt.Sprintf("release:   4.15.1 (amd64) from stable-4.15: payload %s, %d components, 1 signature(s) verified", digest("payload", 0), s.ReleaseComponents)}
		r.Pictures = []report.Picture{{Title: "stable-4.15", SVG: releasePicture}}
		for i := 0; i <= s.ReleaseComponents; i++ {
			r.Images = append(r.Images, image(src+"/ocp/release", dst+"/ocp/release", "release", digest("component", i), i, 0))
		}
	}
	for _, im := range r.Images {
		r.BytesSent += im.Bytes
		r.BlobsSent += 2
	}
	r.Sort()
	return r
}

func image(src, dst, kind, dgst string, i, failEvery int) report.Image {
	im := report.Image{Source: src + "@" + dgst, Kind: kind, Digest: dgst, DestRepo: dst, Destination: dst + "@" + dgst,
		Status: "copied", Bytes: 2048 + int64(i%7)*512, Signature: "unsigned"}
	if failEvery > 0 && i%failEvery == failEvery-1 {
		im.Status, im.Error, im.Bytes = "failed", "copy "+im.Source+": manifest unknown: the source has no such manifest", 0
	}
	return im
}

func digest(what string, i int) string {
	h := uint64(14695981039346656037)
	for _, b := range []byte(fmt.Sprintf("%s-%d", what, i)) {
		h = (h ^ uint64(b)) * 1099511628211
	}
	return fmt.Sprintf("sha256:%016x%016x%016x%016x", h, h*31, h*37, h*41)
}

// maxGraphs is the most packages of a catalog whose upgrade graphs the
// pipeline draws when the configuration names none (a catalog mirrored
// heads only keeps every package).
const maxGraphs = 40

// channelPicture is an upgrade graph of a package's channel of three
// bundles, the head kept, about the size Graphviz draws it (4 KiB).
func channelPicture(pkg string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="no"?>` + "\n" + `<svg width="520pt" height="130pt" viewBox="0.00 0.00 520.00 130.00" xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">` + "\n")
	fmt.Fprintf(&b, `<g id="graph0" class="graph" transform="scale(1 1) rotate(0) translate(4 126)"><title>%s</title>`+"\n", pkg)
	fmt.Fprintf(&b, `<g id="clust1" class="cluster"><title>cluster_stable</title><polygon fill="none" stroke="black" stroke-width="2" points="8,-8 8,-114 504,-114 504,-8 8,-8"/><text text-anchor="middle" x="256" y="-97.4" font-family="Helvetica,sans-Serif" font-size="14.00">channel stable (default)</text></g>`+"\n")
	for i := 0; i < 3; i++ {
		x := 90 + 160*i
		fill, kept := "#eeeeee", "pruned"
		if i == 2 {
			fill, kept = "#c8e6c9", "kept: channel head"
		}
		fmt.Fprintf(&b, `<g id="node%d" class="node"><title>%s.v1.0.%d</title><polygon fill="%s" stroke="black" points="%d,-70 %d,-70 %d,-34 %d,-34 %d,-70"/><text text-anchor="middle" x="%d" y="-56.8" font-family="Helvetica,sans-Serif" font-size="14.00">v1.0.%d</text><text text-anchor="middle" x="%d" y="-41.8" font-family="Helvetica,sans-Serif" font-size="10.00">%s</text></g>`+"\n",
			i+1, pkg, i, fill, x+62, x-62, x-62, x+62, x+62, x, i, x, kept)
		if i > 0 {
			fmt.Fprintf(&b, `<g id="edge%d" class="edge"><title>%s.v1.0.%d&#45;&gt;%s.v1.0.%d</title><path fill="none" stroke="black" d="M%d,-52C%d,-52 %d,-52 %d,-52"/><polygon fill="black" stroke="black" points="%d,-55.5 %d,-52 %d,-48.5 %d,-55.5"/><text text-anchor="middle" x="%d" y="-58" font-family="Helvetica,sans-Serif" font-size="10.00">replaces</text></g>`+"\n",
				i, pkg, i, pkg, i-1, x-160+62, x-160+80, x-80, x-62, x-62, x-52, x-62, x-62, x-80)
		}
	}
	b.WriteString("</g>\n</svg>\n")
	return b.String()
}

// releasePicture is a channel's update graph as the release source draws
// it, small: one z-stream chosen.
const releasePicture = `<svg width="120pt" height="60pt" viewBox="0 0 120 60" xmlns="http://www.w3.org/2000/svg"><g class="graph"><g class="node"><ellipse cx="60" cy="30" rx="40" ry="18" fill="#c8e6c9" stroke="#2e7d32"/><text x="60" y="34" text-anchor="middle" font-size="12">4.15.1</text></g></g></svg>`
