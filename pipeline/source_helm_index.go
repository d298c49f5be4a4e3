package pipeline

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/helm"
	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// The charts of a run as a site serves them over HTTP: in
// working-dir/helm-charts/REPO/ (REPO: the repository's name, "local" for
// local charts), each chart archive as CHART-VERSION.tgz beside an
// index.yaml that names it by a relative URL and gives its SHA-256, as
// `helm repo index` writes. Serving working-dir/helm-charts/ makes
// https://SITE/REPO a chart repository (`helm repo add REPO https://SITE/REPO`).

// chartIndexes are the chart archives written, by repository name.
type chartIndexes map[string][]helm.IndexEntry

// helmIndexFile is the name of a repository's index in working-dir/helm-charts/REPO/.
const helmIndexFile = "index.yaml"

// serveChart writes ch's archive into repo's folder and adds it to idx.
func (s *helmSource) serveChart(idx chartIndexes, repo string, ch *helm.Chart) error {
	p := s.chartArchive(repo, ch.Name(), ch.Version())
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(p, ch.Archive, 0o644); err != nil {
		return fmt.Errorf("helm chart %s %s: %w", ch.Name(), ch.Version(), err)
	}
	file := filepath.Base(p)
	if !slices.ContainsFunc(idx[repo], func(e helm.IndexEntry) bool { return e.URL == file }) {
		idx[repo] = append(idx[repo], helm.IndexEntry{Chart: ch, URL: file})
	}
	return nil
}

// chartArchive is where the archive of chart version of repo is served:
// working-dir/helm-charts/REPO/CHART-VERSION.tgz, beside its OCI layout.
func (s *helmSource) chartArchive(repo, chart, version string) string {
	return s.r.workDir.HelmChartDir(repo, chart, version) + ".tgz"
}

// writeIndexes writes the index.yaml of each repository of idx.
func (s *helmSource) writeIndexes(idx chartIndexes) error {
	for repo, entries := range idx {
		b, err := helm.WriteIndex(entries)
		if err != nil {
			return fmt.Errorf("helm repository %s: index.yaml: %w", repo, err)
		}
		p := filepath.Join(filepath.Dir(s.chartArchive(repo, "x", "0")), helmIndexFile)
		if err := atomicfile.WriteFile(p, b, 0o644); err != nil {
			return fmt.Errorf("helm repository %s: %w", repo, err)
		}
	}
	return nil
}

// serveArchived writes the chart archives of recs (charts an archive
// carries, as its charts.json records them) and their indexes, reading each
// chart's artifact from the archive and checking its archive digest. A chart
// that cannot be read is a warning: its artifact is mirrored all the same.
func (s *helmSource) serveArchived(ctx context.Context, ar Archived, recs []chartRecord) ([]string, error) {
	idx := chartIndexes{}
	var warnings []string
	for _, rec := range recs {
		var ch *helm.Chart
		var err error
		if i := slices.IndexFunc(ar.Manifest.Images, func(ir archive.ImageRecord) bool { return ir.Source == rec.Ref }); i >= 0 {
			ch, err = archivedChart(ctx, ar.Content, ar.Manifest.Images[i], rec)
		} else {
			// An earlier archive carried it: its archive is beside the index
			// if that archive was loaded with this workspace.
			ch, err = s.servedChart(rec)
		}
		if err == nil {
			err = s.serveChart(idx, rec.Repository, ch)
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("helm chart %s %s is not in working-dir/helm-charts/%s/%s: %v", rec.Chart, rec.Version, rec.Repository, helmIndexFile, err))
		}
	}
	return warnings, s.writeIndexes(idx)
}

// servedChart reads the archive of rec an earlier run wrote into
// working-dir/helm-charts, checked against the digest rec recorded.
func (s *helmSource) servedChart(rec chartRecord) (*helm.Chart, error) {
	p := s.chartArchive(rec.Repository, rec.Chart, rec.Version)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("not in this archive, and no earlier archive loaded with this workspace wrote it (%w)", err)
	}
	if got := helm.ArchiveDigest(data); got != rec.ArchiveDigest {
		return nil, fmt.Errorf("%s (sha256:%s) is not the chart the archive recorded (sha256:%s)", p, got, rec.ArchiveDigest)
	}
	return helm.LoadArchive(data)
}

// archivedChart reads the chart archive of the artifact ir and checks it
// against the digest rec recorded on the connected side.
func archivedChart(ctx context.Context, content endpoint.Source, ir archive.ImageRecord, rec chartRecord) (*helm.Chart, error) {
	ch, _, err := chartArtifact(ctx, content, ir.Destination, ir.Digest.String(), rec.Ref)
	if err != nil {
		return nil, err
	}
	if got := helm.ArchiveDigest(ch.Archive); rec.ArchiveDigest != "" && got != rec.ArchiveDigest {
		return nil, fmt.Errorf("the chart archive read (sha256:%s) is not the one recorded (sha256:%s)", got, rec.ArchiveDigest)
	}
	return ch, nil
}

// chartArtifact reads the chart artifact reference (a tag or a digest) of
// repo from src, its chart archive checked against the layer digest; ref
// names it in errors. It returns the chart and the manifest's digest.
func chartArtifact(ctx context.Context, src endpoint.Source, repo, reference, ref string) (*helm.Chart, digest.Digest, error) {
	m, err := src.Manifest(ctx, repo, reference)
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: %w", ref, err)
	}
	d, size, err := helm.ChartLayer(m.Raw, ref)
	if err != nil {
		return nil, "", err
	}
	rc, err := src.Blob(ctx, repo, endpoint.Descriptor{Digest: d, Size: size})
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: %w", ref, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, size+1))
	if err != nil {
		return nil, "", fmt.Errorf("chart %s: %w", ref, err)
	}
	if int64(len(data)) != size || d.Validate() != nil || d.Algorithm().FromBytes(data) != d {
		return nil, "", fmt.Errorf("chart %s: the chart layer read does not match its digest %s", ref, d)
	}
	ch, err := helm.LoadArchive(data)
	return ch, m.Digest, err
}
