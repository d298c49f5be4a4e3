package registrytest

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/distribution/distribution/v3/registry/auth"
)

// tokenFront puts token auth in front of next (a registry reached without
// credentials): the TokenServer answers at /v2/auth on the WAN's host, and
// Distribution's token access controller checks every other request's
// token against the access the request needs, answering a Bearer challenge
// (with the scope) when it falls short.
func (w *WAN) tokenFront(next http.Handler) (http.Handler, error) {
	dir, err := os.MkdirTemp("", "airlock-wan-token-")
	if err != nil {
		return nil, fmt.Errorf("WAN simulator: %w", err)
	}
	w.dir = dir
	ttl := w.Config.TokenTTL
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	s, err := newTokenServer(dir, "airlock-wan", ttl, map[string]TokenUser{
		WANUser.Username: {Password: WANUser.Password, Push: true},
	})
	if err != nil {
		return nil, err
	}
	s.anonymousPull = true
	ac, err := auth.GetAccessController("token", s.registryAuth("http://"+w.Host+tokenPath))
	if err != nil {
		return nil, fmt.Errorf("WAN simulator: token access controller: %w", err)
	}
	w.token = s
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == tokenPath {
			w.tokens.Add(1)
			s.serve(rw, r)
			return
		}
		if _, err := ac.Authorized(r, accessFor(r)...); err != nil {
			w.challenges.Add(1)
			if ch, ok := errors.AsType[auth.Challenge](err); ok {
				ch.SetHeaders(r, rw)
			}
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(rw, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		r.Header.Del("Authorization")
		next.ServeHTTP(rw, r)
	}), nil
}

// accessFor is the access a registry request needs, as Distribution derives
// it: pull to read a repository, pull and push to write one (and pull on the
// repository a blob is mounted from), delete to delete, everything on the
// registry's catalog to list it; the base endpoint needs a token but no access.
func accessFor(r *http.Request) []auth.Access {
	p := strings.TrimPrefix(r.URL.Path, "/v2/")
	if p == "_catalog" {
		return []auth.Access{{Resource: auth.Resource{Type: "registry", Name: "catalog"}, Action: "*"}}
	}
	name := ""
	for _, sep := range []string{"/blobs/", "/manifests/", "/tags/"} {
		if i := strings.Index(p, sep); i > 0 && (name == "" || i < len(name)) {
			name = p[:i]
		}
	}
	if name == "" {
		return nil
	}
	repo := func(n, action string) auth.Access {
		return auth.Access{Resource: auth.Resource{Type: "repository", Name: n}, Action: action}
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return []auth.Access{repo(name, "pull")}
	case http.MethodDelete:
		return []auth.Access{repo(name, "delete")}
	}
	out := []auth.Access{repo(name, "pull"), repo(name, "push")}
	if from := r.URL.Query().Get("from"); from != "" && r.URL.Query().Get("mount") != "" {
		out = append(out, repo(from, "pull"))
	}
	return out
}
