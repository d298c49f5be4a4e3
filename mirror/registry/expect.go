package registry

import "slices"

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
	started := map[string]bool{} // host and credential given a fresh group by this call
	for _, repo := range repos {
		host, path, err := splitRepo(repo)
		if err != nil {
			continue
		}
		auth, err := r.authFor(host, repo)
		if err != nil {
			continue
		}
		fp := authFingerprint(auth)
		hs := r.hostOf(host)
		hs.mu.Lock()
		if g, joined := hs.group(fp, path, !started[host+"\x00"+fp]); joined {
			started[host+"\x00"+fp] = true
			if scope := "repository:" + path + ":" + action; !slices.Contains(g.scopes, scope) {
				g.scopes = append(g.scopes, scope)
			}
		}
		hs.mu.Unlock()
	}
}

// groupScopes returns the token scopes a new transport for group g of host
// hs asks for: the expected repositories' (Expect), with repository path's
// first.
func groupScopes(hs *hostState, g *regHost, path string, push bool) []string {
	scope := "repository:" + path + ":pull"
	if push {
		scope = "repository:" + path + ":push,pull"
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	out := []string{scope}
	for _, s := range g.scopes {
		if s != scope {
			out = append(out, s)
		}
	}
	return out
}
