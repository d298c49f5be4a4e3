package deletion_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
)

// rawRegistry is the independent client: plain net/http against the /v2/ API.
type rawRegistry struct {
	t    *testing.T
	base string
}

const manifestAccept = "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json"

func (r rawRegistry) get(path string, v any) int {
	r.t.Helper()
	resp, err := http.Get(r.base + path)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && v != nil {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			r.t.Fatalf("GET %s: %v", path, err)
		}
	}
	return resp.StatusCode
}

func (r rawRegistry) repos() []string {
	var body struct {
		Repositories []string `json:"repositories"`
	}
	if code := r.get("/v2/_catalog?n=100", &body); code != http.StatusOK || len(body.Repositories) == 0 {
		r.t.Fatalf("GET /v2/_catalog: %d, %d repositories", code, len(body.Repositories))
	}
	return body.Repositories
}

func (r rawRegistry) tags(repo string) []string {
	var body struct {
		Tags []string `json:"tags"`
	}
	r.get("/v2/"+repo+"/tags/list", &body)
	return body.Tags
}

// manifest returns the raw manifest (nil when the registry does not serve it).
func (r rawRegistry) manifest(repo, ref string) ([]byte, digest.Digest) {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.base+"/v2/"+repo+"/manifests/"+ref, nil)
	req.Header.Set("Accept", manifestAccept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return b, digest.FromBytes(b)
}

func (r rawRegistry) head(repo, ref string) int {
	req, _ := http.NewRequest(http.MethodHead, r.base+"/v2/"+repo+"/manifests/"+ref, nil)
	req.Header.Set("Accept", manifestAccept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (r rawRegistry) headBlob(repo string, d digest.Digest) int {
	resp, err := http.Head(r.base + "/v2/" + repo + "/blobs/" + d.String())
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (r rawRegistry) send(method, repo, ref string, body []byte, mediaType string) int {
	req, _ := http.NewRequest(method, r.base+"/v2/"+repo+"/manifests/"+ref, strings.NewReader(string(body)))
	if mediaType != "" {
		req.Header.Set("Content-Type", mediaType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

type rawManifest struct {
	MediaType string `json:"mediaType"`
	Config    *struct {
		Digest digest.Digest `json:"digest"`
		Size   int64         `json:"size"`
	} `json:"config"`
	Layers []struct {
		Digest digest.Digest `json:"digest"`
		Size   int64         `json:"size"`
	} `json:"layers"`
	Manifests []struct {
		Digest digest.Digest `json:"digest"`
	} `json:"manifests"`
}

// blobs adds to out every blob (the manifest itself, children, config, layers)
// of repo@d with its size; it reports false when the registry does not serve it.
func (r rawRegistry) blobs(repo string, d digest.Digest, out map[digest.Digest]int64) bool {
	r.t.Helper()
	raw, got := r.manifest(repo, d.String())
	if raw == nil {
		return false
	}
	if got != d {
		r.t.Fatalf("%s@%s served content with digest %s", repo, d, got)
	}
	out[d] = int64(len(raw))
	var m rawManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		r.t.Fatal(err)
	}
	for _, c := range m.Manifests {
		r.blobs(repo, c.Digest, out)
	}
	if m.Config != nil {
		out[m.Config.Digest] = m.Config.Size
	}
	for _, l := range m.Layers {
		out[l.Digest] = l.Size
	}
	return true
}
