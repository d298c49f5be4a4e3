package registry

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

const (
	authUser = "alice"
	authPass = "pw-9f3c1e" // never printed: every error is checked for it
)

// authEnv is one user environment: HOME and the variables the lookup reads,
// all pointing into a fresh folder, with PATH holding only fake helpers.
type authEnv struct{ home, bin string }

// testHome is $HOME for the whole package (see TestMain): containers/image
// reads $HOME once per process.
var testHome string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "airlock-registry-home-")
	if err != nil {
		panic(err)
	}
	testHome = dir
	os.Setenv("HOME", dir)                                 // never the developer's own ~/.docker/config.json
	dropInDir = filepath.Join(dir, "no-registries.conf.d") // nor this machine's registries.conf.d
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func newAuthEnv(t *testing.T) authEnv {
	t.Helper()
	e := authEnv{home: testHome, bin: t.TempDir()}
	clean := func() {
		ents, _ := os.ReadDir(testHome)
		for _, de := range ents {
			os.RemoveAll(filepath.Join(testHome, de.Name()))
		}
	}
	clean()
	t.Cleanup(clean) // the package's other tests see an empty home
	for _, v := range []string{"REGISTRY_AUTH_FILE", "XDG_CONFIG_HOME", "DOCKER_CONFIG"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(e.home, "run"))
	// registries.conf may name credential helpers: use an empty one.
	t.Setenv("CONTAINERS_REGISTRIES_CONF", e.write(t, "registries.conf", ""))
	t.Setenv("PATH", e.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return e
}

func (e authEnv) write(t *testing.T, rel, content string) string {
	t.Helper()
	p := filepath.Join(e.home, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// helper installs docker-credential-NAME answering get for host with user and
// password, and "credentials not found" for any other host.
func (e authEnv) helper(t *testing.T, name, host, user, pass string) {
	t.Helper()
	script := `#!/bin/sh
[ "$1" = get ] || exit 1
read -r server
if [ "$server" = "` + host + `" ]; then
  printf '{"ServerURL":"%s","Username":"` + user + `","Secret":"` + pass + `"}' "$server"
  exit 0
fi
echo "credentials not found in native keychain"
exit 1
`
	if err := os.WriteFile(filepath.Join(e.bin, "docker-credential-"+name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

func authJSON(host, user, pass string) string {
	a := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	return `{"auths":{"` + host + `":{"auth":"` + a + `"}}}`
}

// TestAuthKeychainSources checks every place credentials come from, against a
// registry that requires them: a source that supplies them makes the registry
// answer, a broken one is an ErrAuthConfig naming the file (and line), never
// "unreachable", and no error shows the password.
func TestAuthKeychainSources(t *testing.T) {
	reg := registrytest.Start(t, registrytest.WithBasicAuth(authUser, authPass))
	host := reg.Host()
	imagetest.MustPush(t, host+"/sec/app:1", fakeimage.Spec{Seed: 7, Layers: 1},
		remote.WithAuth(&authn.Basic{Username: authUser, Password: authPass}))

	tests := []struct {
		name     string
		setup    func(t *testing.T, e authEnv) string // returns --authfile
		wantErr  []string                             // all in the error; nil: the registry answers
		wantAuth bool                                 // the error is the registry refusing (ErrAuth)
	}{
		{"--authfile", func(t *testing.T, e authEnv) string {
			return e.write(t, "a/auth.json", authJSON(host, authUser, authPass))
		}, nil, false},
		{"$REGISTRY_AUTH_FILE", func(t *testing.T, e authEnv) string {
			t.Setenv("REGISTRY_AUTH_FILE", e.write(t, "b/auth.json", authJSON(host, authUser, authPass)))
			return ""
		}, nil, false},
		{"--authfile wins over $REGISTRY_AUTH_FILE", func(t *testing.T, e authEnv) string {
			t.Setenv("REGISTRY_AUTH_FILE", e.write(t, "b/auth.json", authJSON(host, authUser, "wrong")))
			return e.write(t, "a/auth.json", authJSON(host, authUser, authPass))
		}, nil, false},
		{"$XDG_RUNTIME_DIR/containers/auth.json", func(t *testing.T, e authEnv) string {
			e.write(t, "run/containers/auth.json", authJSON(host, authUser, authPass))
			return ""
		}, nil, false},
		{"~/.config/containers/auth.json", func(t *testing.T, e authEnv) string {
			e.write(t, ".config/containers/auth.json", authJSON(host, authUser, authPass))
			return ""
		}, nil, false},
		{"~/.docker/config.json", func(t *testing.T, e authEnv) string {
			e.write(t, ".docker/config.json", authJSON(host, authUser, authPass))
			return ""
		}, nil, false},
		{"$DOCKER_CONFIG", func(t *testing.T, e authEnv) string {
			e.write(t, ".docker/config.json", authJSON(host, authUser, "wrong")) // not read
			t.Setenv("DOCKER_CONFIG", filepath.Dir(e.write(t, "dc/config.json", authJSON(host, authUser, authPass))))
			return ""
		}, nil, false},
		{"credHelpers", func(t *testing.T, e authEnv) string {
			e.helper(t, "fake", host, authUser, authPass)
			e.write(t, ".docker/config.json", `{"credHelpers":{"`+host+`":"fake"}}`)
			return ""
		}, nil, false},
		{"credsStore", func(t *testing.T, e authEnv) string {
			e.helper(t, "store", host, authUser, authPass)
			e.write(t, ".docker/config.json", `{"auths":{"`+host+`":{}},"credsStore":"store"}`)
			return ""
		}, nil, false},
		{"credsStore without credentials for the host", func(t *testing.T, e authEnv) string {
			e.helper(t, "store", "other.example", authUser, authPass)
			e.write(t, ".docker/config.json", `{"credsStore":"store"}`)
			return ""
		}, []string{"401", "config.json has none for " + host}, true},
		{"no credentials anywhere", func(t *testing.T, e authEnv) string { return "" }, []string{"401", "airlock has none: no auth file was found"}, true},
		{"wrong password", func(t *testing.T, e authEnv) string {
			return e.write(t, "a/auth.json", authJSON(host, authUser, "wrong-"+authPass))
		}, []string{"401", "refused the credentials for " + host + " from ", "a/auth.json", "--authfile"}, true},
		{"--authfile does not exist", func(t *testing.T, e authEnv) string {
			return filepath.Join(e.home, "nope", "auth.json")
		}, []string{"--authfile", "nope/auth.json", "does not exist"}, false},
		{"$REGISTRY_AUTH_FILE does not exist", func(t *testing.T, e authEnv) string {
			t.Setenv("REGISTRY_AUTH_FILE", filepath.Join(e.home, "missing.json"))
			return ""
		}, []string{"$REGISTRY_AUTH_FILE", "missing.json", "does not exist"}, false},
		{"malformed --authfile", func(t *testing.T, e authEnv) string {
			return e.write(t, "a/auth.json", "{\n  \"auths\": {\n    \""+host+"\": {\"auth\": \"x\"},,\n  }\n}\n")
		}, []string{"a/auth.json line 3 column", "not valid JSON"}, false},
		{"malformed default docker config", func(t *testing.T, e authEnv) string {
			e.write(t, ".docker/config.json", "{\n\"auths\": [1]\n}")
			return ""
		}, []string{".docker/config.json line 2", "auths is a JSON array, want an object"}, false},
		{"auth not base64", func(t *testing.T, e authEnv) string {
			return e.write(t, "a/auth.json", "{\"auths\": {\n\""+host+"\": {\"auth\": \"not base64!\"}}}")
		}, []string{"a/auth.json line 2", "not base64 of USER:PASSWORD"}, false},
		{"credential helper missing", func(t *testing.T, e authEnv) string {
			e.write(t, ".docker/config.json", `{"credsStore":"absent"}`)
			return ""
		}, []string{"docker-credential-absent not found on $PATH", ".docker/config.json"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newAuthEnv(t)
			authFile := tc.setup(t, e)
			r := New(Options{AuthFile: authFile, Retry: retry.Retries(0)})
			err := r.Probe(context.Background(), host+"/sec/app", false)
			if err != nil && strings.Contains(err.Error(), authPass) {
				t.Fatalf("the error shows the password: %v", err)
			}
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("probe: %v", err)
				}
				if _, err := r.Resolve(context.Background(), host+"/sec/app:1"); err != nil {
					t.Fatalf("resolve: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("probe succeeded, want an error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if got := errors.Is(err, ErrAuth); got != tc.wantAuth {
				t.Errorf("errors.Is(ErrAuth) = %v, want %v: %v", got, tc.wantAuth, err)
			}
			if !tc.wantAuth && !errors.Is(err, ErrAuthConfig) {
				t.Errorf("want ErrAuthConfig: %v", err)
			}
			if strings.Contains(err.Error(), "unreachable") {
				t.Errorf("a credentials problem reported as unreachable: %v", err)
			}
		})
	}
}

// A credential helper that never answers fails the lookup after the helper
// deadline, naming where it comes from: credHelpers of an auth file (run and
// stopped by airlock) and credential-helpers of registries.conf (run by
// containers/image).
func TestCredentialHelperDeadline(t *testing.T) {
	defer func(old time.Duration) { helperTimeout = old }(helperTimeout)
	helperTimeout = 300 * time.Millisecond
	reg := registrytest.Start(t, registrytest.WithBasicAuth(authUser, authPass))
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, e authEnv) *RegistriesConf
		want  []string
	}{
		{"credHelpers", func(t *testing.T, e authEnv) *RegistriesConf {
			e.write(t, ".docker/config.json", `{"credHelpers":{"`+reg.Host()+`":"slow"}}`)
			return nil
		}, []string{`credHelpers "slow"`, ".docker/config.json", "no answer within 300ms"}},
		{"registries.conf credential-helpers", func(t *testing.T, e authEnv) *RegistriesConf {
			conf, err := LoadRegistriesConf(e.write(t, "rc/registries.conf", "credential-helpers = [\"slow\"]\n"))
			if err != nil {
				t.Fatal(err)
			}
			return conf
		}, []string{"no answer within 300ms", "credential-helpers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newAuthEnv(t)
			// exec: the deadline stops the helper itself; sleep 3 bounds it anyway
			// where containers/image runs it without one.
			if err := os.WriteFile(filepath.Join(e.bin, "docker-credential-slow"), []byte("#!/bin/sh\nexec sleep 3\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			conf := tc.setup(t, e)
			r := New(Options{Retry: retry.Retries(0), Sources: conf})
			err := r.Probe(context.Background(), reg.Host()+"/sec/app", false)
			if !errors.Is(err, ErrAuthConfig) {
				t.Fatalf("err = %v, want ErrAuthConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want it to say %q", err, w)
				}
			}
		})
	}
}
