package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/manifests"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/release/graphimage"
	"github.com/airlock-mirror/airlock/workspace"
)

// The graph-data image (mirror.platform.graph) in the plan: built locally
// (mirror.ImageRequest.Built), so it travels like a chart artifact through
// every workflow, and named in the UpdateService by the digest it was built
// with.
const (
	// graphKind is its kind: not a release (no release names it, delete
	// keeps it unless delete.platform.graph says otherwise), not an image
	// of a source registry (no mirror rule names it).
	graphKind mirror.ImageKind = workspace.WantGraphImage
	// graphOrigin is its origin.
	graphOrigin = "platform:graph-data"
	// graphImageName names it in the plan (a reserved domain: it is read
	// from the workspace, never from a registry).
	graphImageName = "graph-image.invalid/" + graphimage.Repo + ":" + graphimage.Tag
	// Folders of the releases' workspace folder: the extracted graph data
	// (graph-data/<sha256 of the tarball>), the base image
	// (graph-bases/<repo>/<digest>/image, catalogimage.FetchImage) and the
	// image built (graph-image, an OCI layout).
	graphDataDir  = "graph-data"
	graphBaseWhat = "graph-base"
	graphImageDir = "graph-image"
)

// graphLimits bound the graph data extracted: the real tarball is a few
// MiB in some thousands of files.
var graphLimits = catalogimage.ExtractLimits{MaxBytes: 1 << 30, MaxFileBytes: 64 << 20, MaxDepth: 16, MaxEntries: 200_000}

// graphWanted reports whether the run builds the graph-data image.
func (s *releaseSource) graphWanted() bool {
	p := s.platform()
	return p != nil && p.Graph
}

// graphRequest builds the graph-data image from the update service's
// graph-data tarball (Releases.GraphDataFile, else GET GraphDataURL) and
// the base image (Releases.GraphBaseImage, copied by digest into the
// workspace), and asks for it at oc-mirror's destination.
func (s *releaseSource) graphRequest(ctx context.Context) (req mirror.ImageRequest, line string, base digest.Digest, err error) {
	tarball, from, err := s.graphTarball(ctx)
	if err != nil {
		return req, "", "", err
	}
	dir, err := s.extractGraphData(ctx, tarball, from)
	if err != nil {
		return req, "", "", err
	}
	baseRef := s.graphBaseRef()
	if err := s.checkGraphBase(); err != nil {
		return req, "", "", err
	}
	fo := catalogimage.FetchOptions{Registry: s.r.srcRegistry(), Logger: s.r.log}
	fetched, err := catalogimage.FetchImage(ctx, baseRef, s.r.workDir.ReleasesDir(), graphBaseWhat, fo)
	if err != nil {
		return req, "", "", fmt.Errorf("mirror.platform.graph: the graph-data image's base image (--graph-base-image): %w", err)
	}
	built, err := catalogimage.AddLayer(ctx, fetched, dir, graphimage.Folder, graphimage.Command(), graphimage.History,
		catalogimage.RebuildOptions{LayoutDir: filepath.Join(s.r.workDir.ReleasesDir(), graphImageDir), Tag: graphimage.Tag, Logger: s.r.log})
	if err != nil {
		return req, "", "", fmt.Errorf("mirror.platform.graph: building the graph-data image: %w", err)
	}
	line = fmt.Sprintf("graph:     graph-data image %s (graph data from %s, base %s@%s)", built.Digest, from, baseRef, fetched.Digest)
	return mirror.ImageRequest{
		Name: graphImageName, Kind: graphKind, Origin: graphOrigin, TargetRepo: graphimage.Repo, TargetTag: graphimage.Tag,
		Built: &mirror.BuiltImage{LayoutDir: built.LayoutDir, Digest: built.Digest, MediaType: string(built.MediaType)},
	}, line, fetched.Digest, nil
}

// graphTarball reads the graph-data tarball and says where it came from.
func (s *releaseSource) graphTarball(ctx context.Context) ([]byte, string, error) {
	o := s.r.opts.Releases
	if o.GraphDataFile != "" {
		st, err := os.Stat(o.GraphDataFile)
		if err == nil && st.Size() > graphimage.DefaultMaxBytes {
			err = fmt.Errorf("%d bytes, more than the %d a graph-data tarball may have", st.Size(), graphimage.DefaultMaxBytes)
		}
		var b []byte
		if err == nil {
			b, err = os.ReadFile(o.GraphDataFile)
		}
		if err != nil {
			return nil, "", fmt.Errorf("--graph-data-file %s: %w", o.GraphDataFile, err)
		}
		return b, o.GraphDataFile, nil
	}
	u := s.graphDataURL()
	if b := s.probed.graphData; b != nil {
		return b, u, nil
	}
	b, err := graphimage.Fetch(ctx, graphimage.FetchOptions{URL: u, Retry: *s.r.retry(), Log: s.r.log})
	return b, u, err
}

// graphDataURL is where the graph-data tarball is read.
func (s *releaseSource) graphDataURL() string {
	if u := s.r.opts.Releases.GraphDataURL; u != "" {
		return u
	}
	return graphimage.DefaultURL
}

// extractGraphData extracts the tarball (once per content) into the
// workspace with the layers' safe extraction, and checks it is graph data.
func (s *releaseSource) extractGraphData(ctx context.Context, tarball []byte, from string) (string, error) {
	sum := sha256.Sum256(tarball)
	root := filepath.Join(s.r.workDir.ReleasesDir(), graphDataDir)
	dir := filepath.Join(root, hex.EncodeToString(sum[:]))
	if _, err := os.Stat(dir); err != nil {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return "", err
		}
		tmp, err := os.MkdirTemp(root, ".extract-")
		if err != nil {
			return "", err
		}
		defer os.RemoveAll(tmp)
		if err := catalogimage.ExtractArchive(ctx, bytes.NewReader(tarball), tmp, graphLimits, s.r.log); err != nil {
			return "", fmt.Errorf("mirror.platform.graph: the graph data from %s: %w", from, err)
		}
		if err := os.Rename(tmp, dir); err != nil {
			return "", err
		}
	}
	if err := graphimage.Check(os.DirFS(dir)); err != nil {
		return "", fmt.Errorf("mirror.platform.graph: the graph data from %s: %w", from, err)
	}
	// Only this tarball's extraction is kept.
	removeOthers(root, filepath.Base(dir))
	return dir, nil
}

// removeOthers removes the entries of dir other than keep (best effort: a
// cache folder).
func removeOthers(dir string, keep ...string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !slices.Contains(keep, e.Name()) {
			_ = os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// graphKeep is Load's rule for the graph-data image: kept when the
// configuration asks for it; missing when the archive lacks it.
func (s *releaseSource) graphKeep(m *archive.Manifest, out *Loaded, origins map[string][]string) {
	if !s.graphWanted() {
		return
	}
	if !slices.ContainsFunc(m.Images, func(ir archive.ImageRecord) bool { return ir.Source == graphImageName && ir.Built }) {
		out.Missing = append(out.Missing, "the graph-data image (mirror.platform.graph; not in the archive: write it with graph: true)")
		return
	}
	origins[graphImageName] = []string{graphOrigin}
	out.Summary = append(out.Summary, "graph:     graph-data image from the archive")
}

// updateService is the UpdateService of the mirrored graph-data image (by
// digest) and payloads; none when the image was not mirrored.
func (s *releaseSource) updateService(p *mirror.Plan, mirrored func(mirror.PlanImage) bool) ([]manifests.File, error) {
	if !s.graphWanted() {
		return nil, nil
	}
	var graphRef, releases string
	for _, im := range p.Images {
		switch {
		case im.Source == graphImageName && slices.Contains(im.Origins, graphOrigin) && mirrored(im):
			graphRef = im.DestRepo + "@" + im.Digest.String()
		case im.Kind == releaseKind && releases == "" && im.Error == "" && isPayloadRepo(im.DestRepo):
			releases = im.DestRepo
		}
	}
	if graphRef == "" {
		return nil, nil
	}
	if releases == "" {
		// No payload in the plan (a graph-only run): where they would be.
		releases = p.Destination + "/" + releasePayloadRepo
	}
	_, f, err := manifests.BuildUpdateService(releases, graphRef)
	if err != nil {
		return nil, err
	}
	return []manifests.File{f}, nil
}

// isPayloadRepo reports whether repo is the payloads' repository.
func isPayloadRepo(repo string) bool {
	return repo == releasePayloadRepo || strings.HasSuffix(repo, "/"+releasePayloadRepo)
}

// graphWant is the history's record of the graph-data image.
func graphWant() workspace.Want {
	return workspace.Want{Kind: workspace.WantGraphImage, Image: graphImageName}
}

// isGraphWant reports whether w records the graph-data image: its own kind,
// or the release want earlier versions recorded it with.
func isGraphWant(w workspace.Want) bool {
	return w.Kind == workspace.WantGraphImage || (w.Kind == workspace.WantRelease && w.Image == graphImageName)
}

// payloadDigests are the digests of the releases' payloads.
func (s *releaseSource) payloadDigests() []digest.Digest {
	var out []digest.Digest
	for _, c := range s.releases {
		out = append(out, c.Digest)
	}
	return out
}

// keepReleaseCache removes from the releases' workspace folder the payloads
// and graph base images no release of this run needs, and the graph-data
// image's folders when the run builds none (each payload image is kept
// whole there, some hundred MB for a real release: they would add up run
// after run, z-stream after z-stream).
func (s *releaseSource) keepReleaseCache(keep []digest.Digest) {
	hexes := make([]string, 0, len(keep))
	for _, d := range keep {
		hexes = append(hexes, d.Encoded())
	}
	dir := s.r.workDir.ReleasesDir()
	for _, what := range []string{"releases", graphBaseWhat + "s"} {
		repos, _ := os.ReadDir(filepath.Join(dir, what))
		for _, r := range repos {
			removeOthers(filepath.Join(dir, what, r.Name()), hexes...)
		}
	}
	removeOthers(filepath.Join(dir, "archived"), hexes...)
	if !s.graphWanted() {
		for _, d := range []string{graphDataDir, graphImageDir, graphBaseWhat + "s"} {
			_ = os.RemoveAll(filepath.Join(dir, d))
		}
	}
}
