package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/oci"
)

func sortedKeys(m map[string]struct{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return slices.Compact(out)
}

// Finish ends the chunks laid out before the copy (their blobs are in place:
// each gets its index and trailer), writes the staged blobs into chunks after
// them, and returns the archive manifest.
// Only the images of meta.Images go into the archive (their tags, the manifests
// and blobs they reach): what an earlier, failed run staged for images the plan no
// longer has is left out, and removed with the staging area.
// The chunk layout depends only on the content and on the blobs Expect was
// given (blobs sorted by digest, fixed tar headers, no timestamps), so the same
// content gives byte-identical chunks. After each chunk of staged blobs is
// written and synced, their staged copies are removed, so the disk holds at
// most one chunk's worth of data twice. An interrupted Finish can be resumed
// by a new Writer on the same directory.
func (w *Writer) Finish(ctx context.Context, meta Meta) (*Manifest, error) {
	if err := w.markFinished(); err != nil {
		return nil, err
	}

	if w.part != "" {
		return nil, fmt.Errorf("archive part %s: a part of a sharded archive ends with FinishShard or FinishSharded", w.part)
	}
	m, _, err := w.buildManifest(meta)
	if err != nil {
		return nil, err
	}
	plan, _, err := w.planChunks(ctx, m)
	if err != nil {
		return nil, err
	}
	if err := w.writeChunks(ctx, m, plan); err != nil {
		return nil, err
	}
	return m, w.finishSigned()
}

// dropStaging removes the staging area once the chunks are written.
func (w *Writer) dropStaging() error {
	if w.journal != nil {
		_ = w.journal.Close()
		w.journal = nil
	}
	if err := os.RemoveAll(w.staging); err != nil {
		return fmt.Errorf("remove staging area: %w", err)
	}
	syncDir(w.dir)
	return nil
}

// buildManifest assembles the manifest (without layout) from what the plan's
// images reach, and checks that the archive is complete: every image, its tags and
// every blob its manifests reference is in the archive or relied on.
func (w *Writer) buildManifest(meta Meta) (*Manifest, *reachSet, error) {
	m := &Manifest{Kind: manifestKind, FormatVersion: FormatVersion, ChunkSize: w.chunkSize, Batch: meta.Batch, BuildsOn: slices.Clone(meta.BuildsOn)}
	if len(meta.Config) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, meta.Config); err != nil {
			return nil, nil, fmt.Errorf("archive configuration is not valid JSON: %w", err)
		}
		m.Config = buf.Bytes()
	}
	for _, im := range meta.Images {
		im.Tags = sortedStrings(im.Tags)
		im.Platforms = sortedStrings(im.Platforms)
		m.Images = append(m.Images, im)
	}
	sort.Slice(m.Images, func(i, j int) bool {
		a, b := m.Images[i], m.Images[j]
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		if a.Destination != b.Destination {
			return a.Destination < b.Destination
		}
		return a.Digest < b.Digest
	})
	for _, c := range meta.Catalogs {
		c.Packages = sortedStrings(c.Packages)
		m.Catalogs = append(m.Catalogs, c)
	}
	sort.Slice(m.Catalogs, func(i, j int) bool {
		if m.Catalogs[i].Source != m.Catalogs[j].Source {
			return m.Catalogs[i].Source < m.Catalogs[j].Source
		}
		return m.Catalogs[i].Destination < m.Catalogs[j].Destination
	})
	extras, err := sortedExtras(meta.Extras)
	if err != nil {
		return nil, nil, err
	}
	m.Extras = extras
	m.Failed = slices.Clone(meta.Failed)
	sort.Slice(m.Failed, func(i, j int) bool {
		if m.Failed[i].Source != m.Failed[j].Source {
			return m.Failed[i].Source < m.Failed[j].Source
		}
		return m.Failed[i].Destination < m.Failed[j].Destination
	})
	if m.Images == nil {
		m.Images = []ImageRecord{}
	}
	if m.Catalogs == nil {
		m.Catalogs = []CatalogRecord{}
	}
	// Only what the plan names goes into the archive: the staging area may also
	// hold images of an earlier, failed run that the plan no longer has.
	r, err := w.reachable(m.Images)
	if err != nil {
		return nil, nil, err
	}
	m.Tags = r.tags
	sort.Slice(m.Tags, func(i, j int) bool {
		if m.Tags[i].Repo != m.Tags[j].Repo {
			return m.Tags[i].Repo < m.Tags[j].Repo
		}
		return m.Tags[i].Reference < m.Tags[j].Reference
	})
	if m.Tags == nil {
		m.Tags = []TagRecord{}
	}
	m.Blobs = []BlobRecord{}
	m.ReliesOn = []ReliedRecord{}
	var left int
	var leftBytes int64
	for d, b := range w.blobs {
		if _, ok := r.repos[d]; !ok {
			left++
			leftBytes += b.size
		}
	}
	if left > 0 {
		w.log.Info("staged blobs that no image of the plan uses are left out of the archive", "blobs", left, "bytes", leftBytes)
	}
	for _, d := range slices.Sorted(maps.Keys(r.repos)) {
		repos := r.repos[d]
		b, staged := w.blobs[d]
		o, shipped := w.shipped[d]
		sb, fromShard := w.fromShards[d]
		switch {
		case fromShard:
			// A shard's chunks hold it (FinishSharded).
			m.Blobs = append(m.Blobs, BlobRecord{Digest: d, Size: sb.size, Repos: sortedKeys(repos)})
		case w.elsewhere.Has(d) && !r.manifests[d]:
			// Another shard of the archive writes it (FinishShard).
		case staged && (r.manifests[d] || !shipped):
			// Manifests are always written, even when an earlier archive shipped them.
			m.Blobs = append(m.Blobs, BlobRecord{Digest: d, Size: b.size, Repos: sortedKeys(repos)})
		case staged:
			// staged by an earlier run before the shipped set said so: do not ship it twice.
			m.ReliesOn = append(m.ReliesOn, reliedRecord(d, b.size, repos, o))
		case w.relied[d] != nil:
			m.ReliesOn = append(m.ReliesOn, reliedRecord(d, w.relied[d].size, repos, w.relied[d].origin))
		default:
			p := r.parent[d]
			return nil, nil, fmt.Errorf("manifest %s in %s references blob %s that was neither written nor shipped by an earlier archive; run mirror-to-disk again", p.ref, p.repo, d)
		}
	}
	sort.Slice(m.Blobs, func(i, j int) bool { return m.Blobs[i].Digest < m.Blobs[j].Digest })
	sort.Slice(m.ReliesOn, func(i, j int) bool { return m.ReliesOn[i].Digest < m.ReliesOn[j].Digest })

	m.Shards = w.shards
	id, err := m.ContentID()
	if err != nil {
		return nil, nil, err
	}
	m.ArchiveID = id
	return m, r, nil
}

// readStaged reads a small staged blob (a manifest) wherever it lives.
func (w *Writer) readStaged(d digest.Digest) ([]byte, error) {
	b := w.blobs[d]
	if b == nil {
		return nil, fmt.Errorf("manifest %s: %w", d, ErrNotFound)
	}
	if b.size > maxIndexSize {
		return nil, fmt.Errorf("manifest %s: %d bytes is too large", d, b.size)
	}
	rc, err := w.openBlob(d)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	raw, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("read staged manifest %s: %w", d, err)
	}
	if digest.FromBytes(raw) != d {
		return nil, fmt.Errorf("staged manifest %s is corrupt: %w; remove %s and run again", d, ErrCorrupt, w.stagedPath(d))
	}
	return raw, nil
}

// openBlob opens a staged blob, from the staging area or a completed chunk.
func (w *Writer) openBlob(d digest.Digest) (io.ReadCloser, error) {
	b := w.blobs[d]
	if b.chunk == "" {
		f, err := os.Open(w.stagedPath(d))
		if err != nil {
			return nil, fmt.Errorf("open staged blob %s: %w; run mirror-to-disk again to fetch it", d, err)
		}
		return f, nil
	}
	f, err := os.Open(filepath.Join(w.dir, b.chunk))
	if err != nil {
		return nil, fmt.Errorf("open chunk %s for blob %s: %w", b.chunk, d, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(f, b.offset, b.size), f}, nil
}

// manifestRefs lists what a manifest stored in the archive references: child
// manifests and the blobs (config and distributable layers) to carry. The subject
// (OCI referrers) is not followed: the copy engine does not copy it, and a
// referrer is in the archive only as an image of the plan itself.
func manifestRefs(raw []byte) (children []oci.ChildManifest, blobs []digest.Digest, err error) {
	refs, err := oci.Parse(oci.Manifest{Digest: digest.FromBytes(raw), Raw: raw})
	if err != nil {
		return nil, nil, err
	}
	children = refs.Manifests
	for _, b := range refs.Blobs {
		blobs = append(blobs, b.Digest)
	}
	return children, blobs, nil
}

// manifestReferences returns the digests a manifest or index references
// (children of the platform subset, config, layers); nil if it does not parse.
func manifestReferences(raw []byte, subset oci.Platforms) []digest.Digest {
	refs, err := oci.Parse(oci.Manifest{Digest: digest.FromBytes(raw), Raw: raw})
	if err != nil {
		return nil
	}
	refs.Manifests = subset.Keep(refs.Manifests)
	return refs.Digests()
}

// reachSet is what the images of the plan reach in the staging area.
type reachSet struct {
	// tags are the staged tags the plan names: each image's tags and digest
	// reference in its destination, and its child manifests by digest.
	tags []TagRecord
	// repos maps every reachable manifest and blob to the repositories that use it.
	repos map[digest.Digest]map[string]struct{}
	// manifests are the reachable manifests (they are always written).
	manifests map[digest.Digest]bool
	// parent names a manifest (repo, digest) that references a digest, for errors.
	parent map[digest.Digest]tagKey
}

// reachable walks the manifests of the plan's images from their staged tags and
// collects what they reference. It fails when an image's manifest, tag or child
// manifest was not written.
func (w *Writer) reachable(images []ImageRecord) (*reachSet, error) {
	r := &reachSet{repos: map[digest.Digest]map[string]struct{}{}, manifests: map[digest.Digest]bool{}, parent: map[digest.Digest]tagKey{}}
	kept := map[tagKey]bool{}
	keep := func(k tagKey) {
		if !kept[k] {
			kept[k] = true
			r.tags = append(r.tags, w.tags[k])
		}
	}
	use := func(d digest.Digest, repo string, from tagKey) {
		if r.repos[d] == nil {
			r.repos[d] = map[string]struct{}{}
		}
		r.repos[d][repo] = struct{}{}
		if _, ok := r.parent[d]; !ok {
			r.parent[d] = from
		}
	}
	type refsOf struct {
		children []oci.ChildManifest // of a platform subset, only its children are here
		blobs    []digest.Digest
	}
	parsed := map[digest.Digest]refsOf{}
	visited := map[tagKey]bool{}
	for _, im := range images {
		repo := im.Destination
		notWritten := fmt.Errorf("image %s (%s): manifest %s was never written to the archive; the copy did not finish, run mirror-to-disk again", im.Source, im.Destination, im.Digest)
		if _, ok := w.blobs[im.Digest]; !ok {
			return nil, notWritten
		}
		found := false
		if k := (tagKey{repo, im.Digest.String()}); w.tags[k].Digest == im.Digest {
			keep(k)
			found = true
		}
		for _, tag := range im.Tags {
			k := tagKey{repo, tag}
			t, ok := w.tags[k]
			if !ok {
				return nil, fmt.Errorf("image %s (%s): tag %s was never written to the archive; the copy did not finish, run mirror-to-disk again", im.Source, im.Destination, tag)
			}
			if t.Digest != im.Digest {
				return nil, fmt.Errorf("image %s (%s): tag %s holds manifest %s, not %s; run mirror-to-disk again", im.Source, im.Destination, tag, t.Digest, im.Digest)
			}
			keep(k)
			found = true
		}
		if !found {
			return nil, notWritten
		}
		type step struct {
			d    digest.Digest
			from tagKey // the manifest that references d
		}
		stack := []step{{im.Digest, tagKey{repo, im.Digest.String()}}}
		for len(stack) > 0 {
			st := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			md := st.d
			k := tagKey{repo, md.String()}
			if visited[k] {
				continue
			}
			visited[k] = true
			r.manifests[md] = true
			use(md, repo, st.from)
			if w.tags[k].Digest == md {
				keep(k)
			}
			refs, ok := parsed[md]
			if !ok {
				var err error
				if _, staged := w.blobs[md]; !staged {
					return nil, fmt.Errorf("image %s (%s): manifest %s references manifest %s that was never written to the archive; run mirror-to-disk again", im.Source, im.Destination, st.from.ref, md)
				}
				raw, err := w.readStaged(md)
				if err != nil {
					return nil, err
				}
				if refs.children, refs.blobs, err = manifestRefs(raw); err != nil {
					return nil, fmt.Errorf("image %s (%s): manifest %s: %w", im.Source, im.Destination, md, err)
				}
				parsed[md] = refs
			}
			for _, c := range oci.Platforms(im.Platforms).Keep(refs.children) {
				stack = append(stack, step{c.Digest, k})
			}
			for _, b := range refs.blobs {
				use(b, repo, k)
			}
		}
	}
	return r, nil
}

func reliedRecord(d digest.Digest, size int64, repos map[string]struct{}, o Origin) ReliedRecord {
	o.Repos = sortedStrings(o.Repos)
	return ReliedRecord{Digest: d, Size: size, Repos: sortedKeys(repos), Origin: o}
}

// markFinished marks the writer finished, once: a second call is ErrFinished.
func (w *Writer) markFinished() error {
	w.waitMove(false)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.finished {
		return ErrFinished
	}
	w.finished = true
	return nil
}

// sortedExtras checks the content sources' files (named, each once, within
// maxExtraBytes in all) and sorts them by source and name.
func sortedExtras(in []ExtraRecord) ([]ExtraRecord, error) {
	out := slices.Clone(in)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Source != out[j].Source {
			return out[i].Source < out[j].Source
		}
		return out[i].Name < out[j].Name
	})
	total := 0
	for i, x := range out {
		if x.Source == "" || x.Name == "" {
			return nil, fmt.Errorf("archive extra file %q of source %q: a source and a name are needed", x.Name, x.Source)
		}
		if i > 0 && out[i-1].Source == x.Source && out[i-1].Name == x.Name {
			return nil, fmt.Errorf("archive extra file %s of source %s given twice", x.Name, x.Source)
		}
		if total += len(x.Data); total > maxExtraBytes {
			return nil, fmt.Errorf("the content sources' extra files exceed %d bytes", maxExtraBytes)
		}
	}
	return out, nil
}
