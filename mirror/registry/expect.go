package registry

import (
	"fmt"
	"slices"
)

var _ interface{ Expect([]string, bool) } = (*Client)(nil)

// Expect implements endpoint.Expecter: repos, which the run will use (for
// push when push is set), are put into the client's repository groups (the
// repositories sharing a transport, reposPerTransport each) now, in a group of
// their own, and each group's first token request asks for the scopes of all
// its repositories. Without it, a token registry (quay.io, registry.redhat.io)
// answers the first request to every other repository of a group with 401 and
// the client asks for a new token: two round trips more per repository, one
// after the other. Repositories already in a group, and unparsable names, are
// left as they are.
func (r *Client) Expect(repos []string, push bool) {
	action := "pull"
	if push {
		action = "push,pull"
	}
	started := map[string]bool{} // host keys given a fresh group by this call
	for _, repo := range repos {
		host, path, err := splitRepo(repo)
		if err != nil {
			continue
		}
		auth, err := r.authFor(host, repo)
		if err != nil {
			continue
		}
		hk := host + "\x00" + authFingerprint(auth)
		r.mu.Lock()
		if _, ok := r.repoKey[repo+"\x00"+hk]; !ok {
			if (!started[hk] && r.groupFill[hk] > 0) || r.groupFill[hk] >= reposPerTransport {
				r.groupNo[hk]++
				r.groupFill[hk] = 0
			}
			started[hk] = true
			r.groupFill[hk]++
			key := fmt.Sprintf("%s\x00%d", hk, r.groupNo[hk])
			r.repoKey[repo+"\x00"+hk] = key
			if scope := "repository:" + path + ":" + action; !slices.Contains(r.scopes[key], scope) {
				r.scopes[key] = append(r.scopes[key], scope)
			}
		}
		r.mu.Unlock()
	}
}

// groupScopes returns the token scopes a new transport for group key asks
// for: the expected repositories' (Expect), with repository path's first.
func (r *Client) groupScopes(key, path string, push bool) []string {
	scope := "repository:" + path + ":pull"
	if push {
		scope = "repository:" + path + ":push,pull"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []string{scope}
	for _, s := range r.scopes[key] {
		if s != scope {
			out = append(out, s)
		}
	}
	return out
}
