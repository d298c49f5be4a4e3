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
}

func (c *manifestMemo) get(repo, reference string) (endpoint.Manifest, bool) {
	if _, err := digest.Parse(reference); err != nil {
		return endpoint.Manifest{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.m[repo+"@"+reference]
	return m, ok
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
