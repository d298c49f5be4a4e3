package manifests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

// testKey is a P-256 public key (cosign generate-key-pair's format).
const testKey = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEw3Gz1rlkB6SRMOKDbb6h4H0bBlmA
QYVJ4C6y1ziX3Q9xO7sUsqB0fsS+hJKyYTj5V0Kd8NYKr0BPVJQHlS7C/A==
-----END PUBLIC KEY-----
`

func TestClusterImagePolicy(t *testing.T) {
	images := []Image{
		{Source: "quay.io/ns/b@sha256:" + strings.Repeat("b", 64), Destination: "mirror.local/m/ns/b@sha256:" + strings.Repeat("b", 64), Kind: KindOperator},
		{Source: "quay.io/ns/a:v1", Destination: "mirror.local/m/ns/a:v1", Kind: KindGeneric},
		{Source: "quay.io/ns/a@sha256:" + strings.Repeat("a", 64), Destination: "mirror.local/m/ns/a@sha256:" + strings.Repeat("a", 64), Kind: KindOperator},
		{Source: "oci:///tmp/layout", Destination: "mirror.local/m/layout:v1", Kind: KindGeneric},
	}
	catalogs := []Catalog{{Source: "quay.io/cat/index:v4.21", Destination: "mirror.local/m/cat/index:v4.21", Digest: "sha256:" + strings.Repeat("c", 64)}}
	for _, tc := range []struct {
		name string
		key  string
		err  string
	}{
		{"key", testKey, ""},
		{"no-key", "", ""},
		{"private-key", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n", "not one PEM public key"},
		{"not-pem", "ssh-ed25519 AAAA", "not one PEM public key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := Build(images, catalogs, Options{SignatureKey: []byte(tc.key)})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []byte
			for _, f := range set.Files() {
				if f.Kind == KindClusterImagePolicy || f.Name == ReadmeName {
					got = append(got, "--- "+f.Name+"\n"...)
					got = append(got, f.Data...)
				}
			}
			golden.Check(t, filepath.Join("testdata", "imagepolicy", tc.name+".golden"), got)
		})
	}
}

func TestLoadSignatureKey(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "cosign.pub"), filepath.Join(dir, "cosign.key")
	if err := os.WriteFile(good, []byte(testKey), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	policyKey := func(key string) func() ([]byte, string) {
		return func() ([]byte, string) {
			if key == "" {
				return nil, ""
			}
			return []byte(key), "the sigstore key of --policy policy.json"
		}
	}
	for _, tc := range []struct {
		path     string
		fallback func() ([]byte, string)
		key, err string
	}{
		{"", nil, "", ""},
		{good, nil, testKey, ""},
		{bad, nil, "", bad + ": the signature key is not one PEM public key"},
		{filepath.Join(dir, "missing.pub"), nil, "", "--signature-key: open"},
		// Without --signature-key, the policy's one key; --signature-key wins.
		{"", policyKey(testKey), testKey, ""},
		{"", policyKey(""), "", ""},
		{"", policyKey("not a key"), "", "the sigstore key of --policy policy.json: the signature key is not one PEM public key"},
		{good, policyKey("not a key"), testKey, ""},
	} {
		key, err := LoadSignatureKey(tc.path, tc.fallback)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) || string(key) != tc.key {
			t.Errorf("LoadSignatureKey(%q) = %q, %v, want %q, %q", tc.path, key, err, tc.key, tc.err)
		}
	}
}
