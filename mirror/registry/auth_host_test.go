package registry

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
)

// The credentials of the repositories of a host are looked up once per host
// when no auth file names a namespace of it (a re-run of 20,000 images in
// 7,000 repositories asked 14,000 times), and per repository when one does:
// a namespace's own entry must keep winning over its host's.
func TestCredentialsLookedUpOncePerHost(t *testing.T) {
	e := newAuthEnv(t)
	count := filepath.Join(e.home, "helper-runs")
	script := `#!/bin/sh
[ "$1" = get ] || exit 1
read -r server
echo run >> '` + count + `'
printf '{"ServerURL":"%s","Username":"helped","Secret":"s3"}' "$server"
`
	if err := os.WriteFile(filepath.Join(e.bin, "docker-credential-counting"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	basic := func(user string) string {
		return `{"auth":"` + base64.StdEncoding.EncodeToString([]byte(user+":pw")) + `"}`
	}
	e.write(t, ".docker/config.json", `{"credHelpers":{"helped.example":"counting"},"auths":{`+
		`"plain.example":`+basic("plain")+`,`+
		`"https://url.example/v1/":`+basic("url")+`,`+
		`"ns.example":`+basic("host")+`,`+
		`"ns.example/team":`+basic("team")+`}}`)
	k := &containersKeychain{}
	user := func(host, repo string) string {
		t.Helper()
		a, err := k.Resolve(repoResource{host: host, repo: host + "/" + repo})
		if err != nil {
			t.Fatalf("%s/%s: %v", host, repo, err)
		}
		if a == authn.Anonymous {
			return "anonymous"
		}
		cfg, err := a.Authorization()
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Username
	}
	for _, tc := range []struct{ host, repo, want string }{
		{"helped.example", "a/one", "helped"},
		{"helped.example", "a/two", "helped"},
		{"helped.example", "b/three", "helped"},
		{"plain.example", "a/one", "plain"},
		{"plain.example", "b/two", "plain"},
		{"url.example", "a/one", "url"},
		{"ns.example", "team/app", "team"},
		{"ns.example", "other/app", "host"},
		{"ns.example", "team/tool", "team"},
		{"ns.example", "other/tool", "host"},
		{"none.example", "a/one", "anonymous"},
		{"none.example", "a/two", "anonymous"},
	} {
		if got := user(tc.host, tc.repo); got != tc.want {
			t.Errorf("%s/%s: credentials of %q, want %q", tc.host, tc.repo, got, tc.want)
		}
	}
	b, err := os.ReadFile(count)
	if err != nil {
		t.Fatal(err)
	}
	if runs := strings.Count(string(b), "run"); runs != 1 {
		t.Errorf("the credential helper of helped.example ran %d times for its 3 repositories, want once", runs)
	}
}
