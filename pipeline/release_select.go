package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/release/graph"
	"github.com/airlock-mirror/airlock/release/payload"
	relsig "github.com/airlock-mirror/airlock/release/signature"
)

// Select chooses the releases (release:, or the channels through the update
// graph), reads each payload and verifies its signatures: a release whose
// signatures are missing or do not verify stops the run before anything is
// planned (--ignore-release-signature skips the check, loudly). The payload
// and its components are requested by digest.
func (s *releaseSource) Select(ctx context.Context) (*Selection, error) {
	p := s.platform()
	sel := &Selection{}
	if p == nil {
		return sel, nil
	}
	s.releases, s.sigs = map[string]*chosenRelease{}, map[digest.Digest][][]byte{}
	sel.Extras = map[string][]byte{}
	var wanted []graph.Release
	if p.Release != "" {
		wanted = []graph.Release{{Payload: location.ImageRef(p.Release)}}
	} else {
		ch, err := graph.Choose(ctx, p, s.graphs(), s.chooseOptions())
		if err != nil {
			return nil, err
		}
		for name, b := range ch.Graphs {
			sel.Extras[graphsExtra+name] = b
		}
		s.risks = ch.Risks
		sel.Warnings = append(sel.Warnings, ch.Warnings...)
		var warn []string
		sel.Pictures, warn = s.pictures(ctx, ch, p)
		sel.Warnings = append(sel.Warnings, warn...)
		wanted = ch.Releases
		if len(wanted) == 0 {
			return nil, fmt.Errorf("%s: mirror.platform: the channels select no release", s.r.cfg.Source)
		}
	}
	store, err := s.signatureStore()
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, got := range s.readReleases(ctx, wanted, p, store) {
		c, sigs, warn, err := got.c, got.sigs, got.warn, got.err
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if warn != "" {
			sel.Warnings = append(sel.Warnings, warn)
		}
		for i, b := range sigs {
			sel.Extras[signaturesExtra+relsig.FileName(c.Digest, i+1)] = b
		}
		c.Signatures = len(sigs)
		s.sigs[c.Digest] = sigs
		if other, dup := s.releases[c.Origin()]; dup && other.Digest != c.Digest {
			errs = append(errs, fmt.Errorf("release %s (%s): two payloads (%s and %s) say they are that release", c.Version, c.Arch, other.PayloadRef(), c.PayloadRef()))
			continue
		}
		s.releases[c.Origin()] = c
		if c.layout != "" && !slices.Contains(sel.LocalBlobs, c.layout) {
			sel.LocalBlobs = append(sel.LocalBlobs, c.layout)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	b, err := s.releasesJSON()
	if err != nil {
		return nil, err
	}
	sel.Extras[releasesExtra] = b
	sel.Images, sel.Wants = s.requests()
	sel.Summary = s.summary()
	keep := s.payloadDigests()
	if s.graphWanted() {
		req, line, base, err := s.graphRequest(ctx)
		if err != nil {
			return nil, err
		}
		sel.Images = append(sel.Images, req)
		sel.Wants[req.Name] = append(sel.Wants[req.Name], graphWant())
		sel.Summary = append(sel.Summary, line)
		keep = append(keep, base)
	}
	s.keepReleaseCache(keep)
	return sel, nil
}

// chooseOptions are graph.Choose's options for the configuration.
func (s *releaseSource) chooseOptions() graph.ChooseOptions {
	return graph.ChooseOptions{AllowConditional: s.r.opts.Releases.AllowConditional, File: s.r.cfg.Source}
}

// graphs is the update service (Releases.GraphURL, $UPDATE_URL_OVERRIDE).
func (s *releaseSource) graphs() graph.Fetcher {
	f := s.r.opts.Releases.graphs
	if f == nil {
		f = graph.NewClient(graph.ClientOptions{URL: s.r.opts.Releases.GraphURL, Retry: s.r.retry(), Log: s.r.log})
	}
	return &probedGraphs{Fetcher: f, p: &s.probed}
}

// readRelease resolves w's payload to a digest and reads its
// release-manifests/ (catalogimage.FetchFolders: the copy engine, digests
// verified, the catalog path's safe extraction).
func (s *releaseSource) readRelease(ctx context.Context, w graph.Release, p *imageset.Platform) (*chosenRelease, error) {
	fo := catalogimage.FetchOptions{Registry: s.r.srcRegistry(), Logger: s.r.log}
	ff, err := catalogimage.FetchFolders(ctx, w.Payload, s.r.workDir.ReleasesDir(), "release", []string{payload.ManifestsDir}, fo, nil)
	if err != nil {
		return nil, fmt.Errorf("release %s: %w", w.Payload, err)
	}
	c, err := readPayload(ff, w.Payload)
	if err != nil {
		return nil, err
	}
	c.Channel, c.layout = w.Channel, ff.ImageLayout
	if w.Version != "" && canonicalVersion(w.Version) != canonicalVersion(c.Version) {
		return nil, fmt.Errorf("release %s: the update graph names it %s but the payload says it is %s; it is not mirrored", w.Payload, w.Version, c.Version)
	}
	if w.Arch != "" && w.Arch != c.Arch {
		return nil, fmt.Errorf("release %s: the update graph of %s names a payload for %s; it is not mirrored", w.Payload, w.Arch, c.Arch)
	}
	if p.KubeVirtContainer {
		if err := s.addKubeVirt(c, ff); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// readPayload reads a fetched payload image into a release.
func readPayload(ff *catalogimage.FetchedFolders, ref string) (*chosenRelease, error) {
	pl, err := payload.Read(os.DirFS(ff.Dir))
	if err != nil {
		return nil, fmt.Errorf("release %s@%s: %w", ref, ff.Digest, err)
	}
	r, err := oci.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("release %s: %w", ref, err)
	}
	c := &chosenRelease{Ref: ref, Version: pl.Version, Digest: ff.Digest, Repo: r.Repository(), Components: pl.Components, Arch: graph.MultiArch}
	if ff.Index == nil {
		c.Arch = ff.Config.Architecture
	}
	if _, ok := payload.ArchName(c.Arch); !ok {
		return nil, fmt.Errorf("release %s@%s: the payload image is for architecture %q, not one OpenShift publishes releases for", ref, ff.Digest, c.Arch)
	}
	c.read = pl
	return c, nil
}

// addKubeVirt adds the KubeVirt container image of the payload's
// architectures (every one that has one for a multi payload) as a component.
func (s *releaseSource) addKubeVirt(c *chosenRelease, ff *catalogimage.FetchedFolders) error {
	archs := []string{c.Arch}
	if c.Arch == graph.MultiArch {
		archs = []string{"amd64", "s390x"}
		if p := s.r.cfg.Mirror.Platform; p != nil && len(p.Platforms) > 0 {
			archs = nil
			for _, ps := range p.Platforms {
				archs = append(archs, ps.Architecture)
			}
		}
	}
	found := 0
	for _, a := range archs {
		ref, err := c.read.KubeVirtImage(a)
		if err != nil {
			if len(archs) > 1 {
				continue
			}
			return fmt.Errorf("release %s@%s: kubeVirtContainer: %w", c.Ref, ff.Digest, err)
		}
		name := kubeVirtName
		if len(archs) > 1 {
			n, _ := payload.ArchName(a)
			name += "-" + n
		}
		d := digest.Digest(ref[strings.LastIndex(ref, "@")+1:])
		c.Components = append(c.Components, payload.Component{Name: name, Image: ref, Digest: d})
		found++
	}
	if found == 0 {
		return fmt.Errorf("release %s@%s: kubeVirtContainer: the payload has no KubeVirt image for %s", c.Ref, ff.Digest, strings.Join(archs, ", "))
	}
	return nil
}

// canonicalVersion drops a leading v.
func canonicalVersion(v string) string { return strings.TrimPrefix(v, "v") }

// compareVersions compares release versions as semver (a version that is
// not semver sorts by its text, after every semver one).
func compareVersions(a, b string) int {
	va, ea := semver.ParseTolerant(a)
	vb, eb := semver.ParseTolerant(b)
	switch {
	case ea == nil && eb == nil:
		return va.Compare(vb)
	case ea == nil:
		return -1
	case eb == nil:
		return 1
	}
	return strings.Compare(a, b)
}

// releaseLayout is where disk-to-mirror copies an archived payload.
func (s *releaseSource) releaseLayout(d digest.Digest) string {
	return filepath.Clean(s.r.workDir.ArchivedReleaseImageDir(d.Encoded()))
}
