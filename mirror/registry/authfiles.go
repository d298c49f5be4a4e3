package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/containers/image/v5/pkg/docker/config"
	"github.com/containers/image/v5/types"
	"github.com/containers/storage/pkg/homedir"
	"github.com/docker/docker-credential-helpers/client"
	"github.com/docker/docker-credential-helpers/credentials"
)

// helperTimeout bounds one run of a credential helper (a variable for tests).
var helperTimeout = 30 * time.Second

// authFileCandidate is a file the default lookup consults, if it exists.
type authFileCandidate struct {
	path   string
	legacy bool // ~/.dockercfg: a bare map of registry → auth
}

// authFileInfo is what airlock itself needs from one auth file: containers/image
// reads auths and credHelpers; credsStore is docker's and read here.
type authFileInfo struct {
	path        string
	credsStore  string
	credHelpers map[string]string // registry → helper
	auths       []string          // the keys of auths
}

// lookup finds the credentials of key (a registry or a repository on host).
// The credHelpers helper of host in the first auth file that names host runs
// here, with helperTimeout, as containers/image would run it (a file's
// credHelpers before its auths); anything else, credential-helpers of
// registries.conf included, goes through containers/image, bounded by the same
// deadline.
func (k *containersKeychain) lookup(key, host string) (types.DockerAuthConfig, error) {
	for _, f := range k.files {
		if name := f.credHelpers[host]; name != "" {
			cred, err := helperCredentials(name, host)
			if err != nil {
				return cred, fmt.Errorf("credHelpers %q in %s: %v", name, f.path, err)
			}
			return cred, nil
		}
		if f.hasAuth(key, host) {
			break
		}
	}
	type answer struct {
		cred types.DockerAuthConfig
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		cred, err := config.GetCredentials(k.sys, key)
		done <- answer{cred, err}
	}()
	select {
	case a := <-done:
		return a.cred, a.err
	case <-time.After(helperTimeout):
		return types.DockerAuthConfig{}, fmt.Errorf("no answer within %s (a credential helper named in registries.conf credential-helpers?)", helperTimeout)
	}
}

// hasAuth reports whether the file's auths hold an entry for key (a repository
// on host, or one of its namespaces) or host, in any of the forms
// containers/image accepts ("quay.io", "quay.io/ns", "https://quay.io/v1/").
func (f authFileInfo) hasAuth(key, host string) bool {
	for _, a := range f.auths {
		if s, ok := strings.CutPrefix(a, "https://"); ok {
			a, _, _ = strings.Cut(s, "/")
		} else if s, ok := strings.CutPrefix(a, "http://"); ok {
			a, _, _ = strings.Cut(s, "/")
		}
		if a == host || a == key || strings.HasPrefix(key, a+"/") {
			return true
		}
	}
	return false
}

// defaultAuthFiles is the default lookup order of containers/image
// (pkg/docker/config), which reads the files; airlock lists them to check each
// one and to honour credsStore.
func defaultAuthFiles() []authFileCandidate {
	home := homedir.Get() // the home containers/image reads, fixed at its first use
	var out []authFileCandidate
	if rt := os.Getenv("XDG_RUNTIME_DIR"); rt != "" {
		out = append(out, authFileCandidate{path: filepath.Join(rt, "containers", "auth.json")})
	} else {
		out = append(out, authFileCandidate{path: fmt.Sprintf("/run/containers/%d/auth.json", os.Getuid())})
	}
	cfg := os.Getenv("XDG_CONFIG_HOME")
	if cfg == "" && home != "" {
		cfg = filepath.Join(home, ".config")
	}
	if cfg != "" {
		out = append(out, authFileCandidate{path: filepath.Join(cfg, "containers", "auth.json")})
	}
	if dc := os.Getenv("DOCKER_CONFIG"); dc != "" {
		out = append(out, authFileCandidate{path: filepath.Join(dc, "config.json")})
	} else if home != "" {
		out = append(out, authFileCandidate{path: filepath.Join(home, ".docker", "config.json")})
	}
	if home != "" {
		out = append(out, authFileCandidate{path: filepath.Join(home, ".dockercfg"), legacy: true})
	}
	return out
}

// readAuthFile checks one auth file: nil when it does not exist, an error
// naming the file and line when it is not valid JSON or an entry cannot be
// decoded. Values are never quoted in errors.
func readAuthFile(c authFileCandidate) (*authFileInfo, error) {
	data, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("auth file %s: %v", c.path, err)
	}
	var doc struct {
		Auths       map[string]authEntry `json:"auths"`
		CredHelpers map[string]string    `json:"credHelpers"`
		CredsStore  string               `json:"credsStore"`
	}
	var target any = &doc
	if c.legacy {
		target = &doc.Auths
	}
	if err := json.Unmarshal(data, target); err != nil {
		return nil, jsonError(c.path, data, err)
	}
	keys := make([]string, 0, len(doc.Auths))
	for k := range doc.Auths {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a := doc.Auths[k].Auth
		if a == "" {
			continue
		}
		dec, err := base64.StdEncoding.DecodeString(a)
		if err != nil || !bytes.Contains(dec, []byte(":")) {
			return nil, fmt.Errorf("auth file %s line %d: the \"auth\" of %q is not base64 of USER:PASSWORD: log in again (podman login %s)", c.path, lineOfKey(data, k), k, k)
		}
	}
	return &authFileInfo{path: c.path, credsStore: doc.CredsStore, credHelpers: doc.CredHelpers, auths: keys}, nil
}

type authEntry struct {
	Auth string `json:"auth"`
}

// jsonError names the file, line and column of a JSON syntax or type error.
func jsonError(path string, data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var off int64 = -1
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
		want := "a string"
		if k := te.Type.Kind(); k == reflect.Map || k == reflect.Struct {
			want = "an object"
		}
		err = fmt.Errorf("%s is a JSON %s, want %s", strings.TrimPrefix(te.Field, "."), te.Value, want)
	}
	if off < 0 {
		return fmt.Errorf("auth file %s is not valid JSON: %v", path, err)
	}
	line, col := lineCol(data, off)
	return fmt.Errorf("auth file %s line %d column %d: not valid JSON: %v (fix the file, or log in again with podman login)", path, line, col, err)
}

// lineCol turns a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1)
	if col < 1 {
		col = 1
	}
	return line, col
}

// lineOfKey is the line where "key" first appears as a JSON string, 0 if it does not.
func lineOfKey(data []byte, key string) int {
	q, _ := json.Marshal(key)
	i := bytes.Index(data, q)
	if i < 0 {
		return 0
	}
	l, _ := lineCol(data, int64(i))
	return l
}

// helperCredentials runs docker-credential-NAME get for host, with a deadline.
// Not found is no credentials, not an error.
func helperCredentials(name, host string) (types.DockerAuthConfig, error) {
	server := host
	if host == "docker.io" {
		server = "https://index.docker.io/v1/" // docker's key for Docker Hub
	}
	prog, err := exec.LookPath("docker-credential-" + name)
	if err != nil {
		return types.DockerAuthConfig{}, fmt.Errorf("docker-credential-%s not found on $PATH: install it or remove the helper from the file", name)
	}
	c, err := client.Get(helperProgram(prog), server)
	if err != nil {
		if credentials.IsErrCredentialsNotFound(err) {
			return types.DockerAuthConfig{}, nil
		}
		return types.DockerAuthConfig{}, fmt.Errorf("docker-credential-%s get %s: %v", name, server, err)
	}
	if c.Username == "<token>" {
		return types.DockerAuthConfig{IdentityToken: c.Secret}, nil
	}
	return types.DockerAuthConfig{Username: c.Username, Password: c.Secret}, nil
}

// helperProgram is client.NewShellProgramFunc with a deadline on each run.
func helperProgram(name string) client.ProgramFunc {
	return func(args ...string) client.Program { return &helperCmd{name: name, args: args} }
}

type helperCmd struct {
	name  string
	args  []string
	input io.Reader
}

func (h *helperCmd) Input(in io.Reader) { h.input = in }

func (h *helperCmd) Output() ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), helperTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.name, h.args...) //nolint:gosec // the helper named by the user's auth file
	cmd.WaitDelay = time.Second                        // a child of a killed helper may hold its output open
	cmd.Stdin = h.input
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if ctx.Err() != nil {
		return out, fmt.Errorf("no answer within %s", helperTimeout)
	}
	return out, err
}
