package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

// releaseChain is the dependent chain of a release mirror: the requests
// that must follow one another over the link before any component of the
// release is known, made by a minimal client on new connections (as a
// run's first requests are): the registry's challenge, the token, the
// payload's manifest, then its config and layers at once (a client cannot
// tell which layer holds release-manifests/ before reading it; a blob is a
// redirect and a CDN request). Took is what it cost, Bytes the blob and
// manifest bytes it read.
type releaseChain struct {
	Took  time.Duration
	Bytes int64
}

// measureReleaseChain measures the chain for the payload repo@dgst at host
// (over the WAN simulator) runs times on fresh clients and keeps the median.
func measureReleaseChain(ctx context.Context, host, repo, dgst string, runs int) (releaseChain, error) {
	var all []releaseChain
	for range runs {
		c, err := releaseChainOnce(ctx, host, repo, dgst)
		if err != nil {
			return releaseChain{}, err
		}
		all = append(all, c)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Took < all[j].Took })
	return all[len(all)/2], nil
}

func releaseChainOnce(ctx context.Context, host, repo, dgst string) (releaseChain, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	base := "http://" + host
	start := time.Now()
	var c releaseChain
	get := func(u, token, accept string) ([]byte, *http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, nil, err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return b, resp, err
	}
	_, resp, err := get(base+"/v2/", "", "")
	if err != nil {
		return c, fmt.Errorf("release chain: %w", err)
	}
	realm, service := bearerChallenge(resp.Header.Get("WWW-Authenticate"))
	token := ""
	if realm != "" {
		q := url.Values{"scope": {"repository:" + repo + ":pull"}}
		if service != "" {
			q.Set("service", service)
		}
		b, resp, err := get(realm+"?"+q.Encode(), "", "")
		if err != nil || resp.StatusCode != http.StatusOK {
			return c, fmt.Errorf("release chain: token: %v %v", resp, err)
		}
		var t struct{ Token, AccessToken string }
		if err := json.Unmarshal(b, &t); err != nil {
			return c, fmt.Errorf("release chain: token: %w", err)
		}
		token = t.Token
		if token == "" {
			token = t.AccessToken
		}
	}
	b, resp, err := get(base+"/v2/"+repo+"/manifests/"+dgst, token, "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json")
	if err != nil || resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("release chain: the payload's manifest: %v %v", resp, err)
	}
	c.Bytes += int64(len(b))
	var m struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	if err := json.Unmarshal(b, &m); err != nil || m.Config.Digest == "" {
		return c, errors.New("release chain: the payload's manifest is not an image manifest")
	}
	blobs := []string{m.Config.Digest}
	for _, l := range m.Layers {
		blobs = append(blobs, l.Digest)
	}
	var g errgroup.Group
	sizes := make([]int64, len(blobs))
	for i, d := range blobs {
		g.Go(func() error {
			b, resp, err := get(base+"/v2/"+repo+"/blobs/"+d, token, "")
			if err != nil || resp.StatusCode != http.StatusOK {
				return fmt.Errorf("release chain: blob %s: %v %v", d, resp, err)
			}
			sizes[i] = int64(len(b))
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return c, err
	}
	c.Took = time.Since(start)
	for _, n := range sizes {
		c.Bytes += n
	}
	return c, nil
}

// bearerChallenge reads realm and service of a `Bearer realm="…",service="…"`
// challenge ("" when it is not one).
func bearerChallenge(h string) (realm, service string) {
	rest, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		return "", ""
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		v = strings.Trim(v, `"`)
		switch k {
		case "realm":
			realm = v
		case "service":
			service = v
		}
	}
	return realm, service
}
