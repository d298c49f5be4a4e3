package registry

import (
	"sync"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// manifestMemo keeps the manifests a source client read, by repository and
// digest, so that the stages of a run (planning, signature discovery,
// measuring, copying) read each source manifest from the registry once.
// Only verified content is kept (its digest is computed from its bytes and
// matched what was asked for or what the registry said), and it is served
// only for a request by that digest in that repository: content addressed,
// so serving it again is what reading it again would give. A manifest read
// by tag is kept under its digest, never under the tag (tags move). The
// memo holds at most Options.KeepManifests bytes; beyond that manifests are
// read again.
// SourceManifests is the memo size for a run's source client: the manifests of
// a catalog-scale plan (thousands of images) fit many times over.
const SourceManifests = 64 << 20

type manifestMemo struct {
	mu    sync.Mutex
	bytes int64
	m     map[string]endpoint.Manifest // by "repo@digest"
	// reading are the manifests being read: a second reader of one (the
	// prefetch and the copy of the same image, say) waits for the first read
	// instead of asking the registry again.
	reading map[string]chan struct{}
}

// claim returns the kept manifest repo@reference (ok), or else a channel to
// wait on while another caller reads it, or else (both nil) makes the caller
// its reader: done must then be called once the read is over (after put).
// References that are not digests, and a memo of size 0, are never claimed.
func (c *manifestMemo) claim(max int64, repo, reference string) (m endpoint.Manifest, ok bool, wait <-chan struct{}, done func()) {
	done = func() {}
	if max <= 0 {
		return m, false, nil, done
	}
	if _, err := digest.Parse(reference); err != nil {
		return m, false, nil, done
	}
	k := repo + "@" + reference
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok = c.m[k]; ok {
		return m, true, nil, done
	}
	if ch, busy := c.reading[k]; busy {
		return m, false, ch, done
	}
	if c.reading == nil {
		c.reading = map[string]chan struct{}{}
	}
	ch := make(chan struct{})
	c.reading[k] = ch
	return m, false, nil, func() {
		c.mu.Lock()
		delete(c.reading, k)
		c.mu.Unlock()
		close(ch)
	}
}

func (c *manifestMemo) put(max int64, repo string, m endpoint.Manifest) {
	if max <= 0 || digest.FromBytes(m.Raw) != m.Digest {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := repo + "@" + m.Digest.String()
	if _, ok := c.m[k]; ok || c.bytes+int64(len(m.Raw)) > max {
		return
	}
	if c.m == nil {
		c.m = map[string]endpoint.Manifest{}
	}
	c.m[k] = m
	c.bytes += int64(len(m.Raw))
}
