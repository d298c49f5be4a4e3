package registrytest

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// WriteAuthFile writes a containers auth.json with credentials per registry
// host (anonymous entries are left out, so that no credentials of the machine
// are used) and returns its path.
func WriteAuthFile(t testing.TB, creds map[string]Credentials) string {
	t.Helper()
	p, err := writeAuthJSON(filepath.Join(t.TempDir(), "auth.json"), creds)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// writeAuthJSON writes the auth.json of WriteAuthFile at path.
func writeAuthJSON(path string, creds map[string]Credentials) (string, error) {
	auths := map[string]any{}
	for host, c := range creds {
		if c.Username != "" {
			auths[host] = map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte(c.Username + ":" + c.Password))}
		}
	}
	b, _ := json.Marshal(map[string]any{"auths": auths})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return "", err
	}
	return path, nil
}
