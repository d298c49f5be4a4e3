package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/mirror/layout"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/release/graph"
	"github.com/airlock-mirror/airlock/release/payload"
)

// Load is the disconnected side: no network. The releases the configuration
// asks for are found in what the archive carried (releases.json for
// release:, the saved update graphs for channels, chosen again offline);
// each payload's signatures are verified again from the archive, its
// release-manifests/ read again from the archived payload image (so the
// components kept are the ones the signed payload lists), and a release the
// archive lacks is missing, by name.
func (s *releaseSource) Load(ctx context.Context, ar Archived) (*Loaded, error) {
	p := s.platform()
	out := &Loaded{Keep: func(archive.ImageRecord, string) []string { return nil }}
	if p == nil {
		return out, nil
	}
	s.releases, s.sigs = map[string]*chosenRelease{}, map[digest.Digest][][]byte{}
	var carried []*chosenRelease
	if b, ok := ar.Extras[releasesExtra]; ok {
		if err := json.Unmarshal(b, &carried); err != nil {
			return nil, fmt.Errorf("the archive's %s: %w", releasesExtra, err)
		}
	}
	var wanted []*chosenRelease
	if p.Release != "" {
		ref := location.ImageRef(p.Release)
		i := slices.IndexFunc(carried, func(c *chosenRelease) bool { return c.Ref == ref || sameDigest(ref, c.PayloadRef()) })
		if i < 0 {
			out.Missing = append(out.Missing, "release "+p.Release+" (not in the archive)")
			return out, nil
		}
		wanted = append(wanted, carried[i])
	} else {
		graphs := map[string][]byte{}
		for name, b := range ar.Extras {
			if rest, ok := strings.CutPrefix(name, graphsExtra); ok {
				graphs[rest] = b
			}
		}
		ch, err := graph.Choose(ctx, p, graph.Offline(graphs), s.chooseOptions())
		if err != nil {
			return nil, fmt.Errorf("choosing the releases from the update graphs the archive carried: %w", err)
		}
		s.risks = ch.Risks
		out.Warnings = append(out.Warnings, ch.Warnings...)
		var warn []string
		out.Pictures, warn = s.pictures(ctx, ch, p)
		out.Warnings = append(out.Warnings, warn...)
		for _, w := range ch.Releases {
			i := slices.IndexFunc(carried, func(c *chosenRelease) bool { return sameDigest(c.PayloadRef(), w.Payload) && c.Arch == w.Arch })
			if i < 0 {
				out.Missing = append(out.Missing, fmt.Sprintf("release %s (%s, payload %s; not in the archive)", w.Version, w.Arch, w.Payload))
				continue
			}
			wanted = append(wanted, carried[i])
		}
	}
	store, done, err := carriedSignatures(ar.Extras, s.r.workDir.ReleasesDir())
	if err != nil {
		return nil, err
	}
	defer done()
	origins := map[string][]string{}
	for _, c := range wanted {
		rec := slices.IndexFunc(ar.Manifest.Images, func(ir archive.ImageRecord) bool {
			return ir.Digest == c.Digest && ir.Attachment == nil && ir.Kind == string(releaseKind)
		})
		if rec < 0 {
			if !failedWhenArchived(ar.Manifest, c) {
				out.Missing = append(out.Missing, fmt.Sprintf("release %s (%s, payload %s; not in the archive)", c.Version, c.Arch, c.PayloadRef()))
			}
			continue
		}
		sigs, warn, err := s.verify(ctx, c, store)
		if err != nil {
			return nil, err
		}
		if warn != "" {
			out.Warnings = append(out.Warnings, warn)
		}
		comps, err := s.archivedComponents(ctx, ar, ar.Manifest.Images[rec], c)
		if err != nil {
			return nil, err
		}
		c.Components, c.Signatures = comps, len(sigs)
		s.sigs[c.Digest] = sigs
		s.releases[c.Origin()] = c
		origins[c.PayloadRef()] = append(origins[c.PayloadRef()], c.Origin())
		for _, comp := range comps {
			origins[comp.Image] = append(origins[comp.Image], c.Origin())
		}
	}
	_, out.Wants = s.requests()
	out.Summary = s.summary()
	s.graphKeep(ar.Manifest, out, origins)
	if o := origins[graphImageName]; len(o) > 0 {
		out.Wants[graphImageName] = append(out.Wants[graphImageName], graphWant())
	}
	out.Keep = func(ir archive.ImageRecord, of string) []string {
		if ir.Kind != string(releaseKind) && ir.Kind != string(graphKind) && ir.Attachment == nil {
			return nil
		}
		return origins[of]
	}
	s.keepReleaseCache(s.payloadDigests())
	return out, nil
}

// failedWhenArchived reports whether the archive records c's payload among
// the images that failed when it was written (a partial batch): it is
// reported as failed with the other failures, not as missing.
func failedWhenArchived(m *archive.Manifest, c *chosenRelease) bool {
	return slices.ContainsFunc(m.Failed, func(f archive.FailedRecord) bool {
		return f.Attachment == nil && (f.Source == c.Ref || sameDigest(f.Source, c.PayloadRef()))
	})
}

// archivedComponents copies the archived payload ir into the workspace,
// reads its release-manifests/ and returns its components (with the
// KubeVirt image the boot images name, when asked for).
func (s *releaseSource) archivedComponents(ctx context.Context, ar Archived, ir archive.ImageRecord, c *chosenRelease) ([]payload.Component, error) {
	const tag = "archived"
	dir := s.releaseLayout(c.Digest)
	dst, err := layout.NewDestination(dir)
	if err != nil {
		return nil, err
	}
	job := transfer.Job{Source: ir.Destination, Digest: ir.Digest, Dest: "release", Tags: []string{tag}, Platforms: ir.Platforms}
	if _, err := transfer.Copy(ctx, ar.Content, dst, []transfer.Job{job}, transfer.Options{Logger: s.r.log}); err != nil {
		return nil, fmt.Errorf("release %s: reading the payload from the archive: %w", c.Version, err)
	}
	ff, err := catalogimage.FetchFolders(ctx, location.OCI(dir).String()+":"+tag, s.r.workDir.ReleasesDir(), "release", []string{payload.ManifestsDir}, catalogimage.FetchOptions{Logger: s.r.log}, nil)
	if err != nil {
		return nil, fmt.Errorf("release %s: %w", c.Version, err)
	}
	read, err := readPayload(ff, c.PayloadRef())
	if err != nil {
		return nil, err
	}
	if read.Digest != c.Digest || read.Version != c.Version {
		return nil, fmt.Errorf("release %s: the archived payload is %s %s, not the release the archive records (%s %s)", c.Version, read.Version, read.Digest, c.Version, c.Digest)
	}
	if s.r.cfg.Mirror.Platform.KubeVirtContainer {
		if err := s.addKubeVirt(read, ff); err != nil {
			return nil, err
		}
	}
	// The components are the ones the signed payload lists, whatever
	// releases.json says.
	return read.Components, nil
}

// Resources: the signature ConfigMaps of the releases mirrored (the cluster
// verifies the releases it updates to with them, offline); the releases'
// mirror sets are idms-release-N, by Kind.
func (s *releaseSource) Resources(p *mirror.Plan, mirrored func(mirror.PlanImage) bool) (Resources, error) {
	ok := map[digest.Digest]bool{}
	for _, im := range p.Images {
		if im.Kind == releaseKind && mirrored(im) && s.Owns(firstOrigin(im.Origins)) {
			ok[im.Digest] = true
		}
	}
	files, err := s.signatureConfigMaps(func(d digest.Digest) bool { return ok[d] })
	if err != nil {
		return Resources{}, err
	}
	us, err := s.updateService(p, mirrored)
	if err != nil {
		return Resources{}, err
	}
	return Resources{Objects: append(files, us...)}, nil
}

func firstOrigin(os []string) string {
	for _, o := range os {
		if strings.HasPrefix(o, "platform:") {
			return o
		}
	}
	return ""
}
