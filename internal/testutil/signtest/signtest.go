// Package signtest signs images and attaches SBOMs the way real clients do,
// for tests: cosign-format signatures with an ECDSA P-256 key (the
// "sha256-<hex>.sig" attachment cosign writes; Debian's skopeo 1.9.3 has
// sigstore signing compiled out, and containers/image's signer is internal), SBOM referrers pushed by
// go-containerregistry (an OCI 1.1 artifact manifest with a subject; the
// "sha256-<hex>" fallback index on a registry without the referrers API), and
// pulls checked by skopeo through a mirror configuration with a sigstoreSigned
// policy.
//
// Test support only: the binary never links it (internal/depcheck).
package signtest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/location"
)

// Key is a sigstore (cosign) ECDSA P-256 key pair: the private key in memory,
// the public key as a PEM file, as policy.json's sigstoreSigned keyPath and
// cosign verify --key take it.
type Key struct {
	private *ecdsa.PrivateKey
	Public  string
}

// NewKey generates a key pair; the public key is written in a temporary folder.
func NewKey(t testing.TB) Key {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	k := Key{private: priv, Public: filepath.Join(t.TempDir(), "key.pub")}
	if err := os.WriteFile(k.Public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return k
}

// registriesD writes a registries.d folder that stores sigstore signatures as
// attachments for every registry.
func registriesD(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "default.yaml"), []byte("default-docker:\n  use-sigstore-attachments: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func run(t testing.TB, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Sign signs repo@d as cosign does with a key: a simple-signing payload
// naming repo (the identity) and d, signed with ECDSA over SHA-256, stored as
// the layer of an OCI manifest tagged "sha256-<hex>.sig" in repo (plain HTTP),
// with the signature in the layer's "dev.cosignproject.cosign/signature"
// annotation. containers/image (skopeo, CRI-O) reads it with
// use-sigstore-attachments. It returns the signature manifest's digest.
func Sign(t testing.TB, k Key, repo string, d digest.Digest) digest.Digest {
	t.Helper()
	payload, err := json.Marshal(map[string]any{
		"critical": map[string]any{
			"identity": map[string]string{"docker-reference": repo},
			"image":    map[string]string{"docker-manifest-digest": d.String()},
			"type":     "cosign container image signature",
		},
		"optional": nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, k.private, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	layer := static.NewLayer(payload, "application/vnd.dev.cosign.simplesigning.v1+json")
	ld := describe(layer)
	ld.Annotations = map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)}
	cfg, err := json.Marshal(map[string]any{
		"architecture": "", "os": "", "config": map[string]any{},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digest.FromBytes(payload).String()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	config := static.NewLayer(cfg, types.OCIConfigJSON)
	return pushManifest(t, repo, "sha256-"+d.Encoded()+".sig", []v1.Layer{config, layer}, map[string]any{
		"schemaVersion": 2, "mediaType": types.OCIManifestSchema1, "config": describe(config), "layers": []v1.Descriptor{ld},
	})
}

func describe(l v1.Layer) v1.Descriptor {
	d, _ := l.Digest()
	s, _ := l.Size()
	mt, _ := l.MediaType()
	return v1.Descriptor{MediaType: mt, Digest: d, Size: s}
}

// pushManifest pushes blobs then the manifest m to repo under reference (a
// tag, or "" for its digest) and returns the manifest's digest.
func pushManifest(t testing.TB, repo, reference string, blobs []v1.Layer, m map[string]any) digest.Digest {
	t.Helper()
	r, err := name.NewRepository(repo, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range blobs {
		if err := remote.WriteLayer(r, l); err != nil {
			t.Fatalf("signtest: push blob to %s: %v", repo, err)
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	d := digest.FromBytes(raw)
	var ref name.Reference = r.Digest(d.String())
	if reference != "" {
		ref = r.Tag(reference)
	}
	if err := remote.Put(ref, rawManifest{raw: raw, mt: types.OCIManifestSchema1}); err != nil {
		t.Fatalf("signtest: push manifest %s: %v", ref, err)
	}
	return d
}

// SBOMArtifactType is the artifact type PushSBOM gives its referrers.
const SBOMArtifactType = "application/spdx+json"

// PushSBOM pushes an SBOM artifact manifest whose subject is repo@subject
// (plain HTTP), with go-containerregistry: on a registry without the referrers
// API it also updates the "sha256-<hex>" fallback index. It returns the
// artifact manifest's digest.
func PushSBOM(t testing.TB, repo string, subject v1.Descriptor, content []byte) digest.Digest {
	t.Helper()
	empty := static.NewLayer([]byte("{}"), "application/vnd.oci.empty.v1+json")
	sbom := static.NewLayer(content, SBOMArtifactType)
	return pushManifest(t, repo, "", []v1.Layer{empty, sbom}, map[string]any{
		"schemaVersion": 2, "mediaType": types.OCIManifestSchema1, "artifactType": SBOMArtifactType,
		"config": describe(empty), "layers": []v1.Descriptor{describe(sbom)}, "subject": subject,
		"annotations": map[string]string{"org.opencontainers.image.created": "2026-11-26T00:00:00Z"},
	})
}

type rawManifest struct {
	raw []byte
	mt  types.MediaType
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return m.mt, nil }

// Referrers lists the referrers of repo@subject with go-containerregistry (the
// API, or the fallback tag where the registry lacks it).
func Referrers(t testing.TB, repo string, subject digest.Digest, opts ...remote.Option) []v1.Descriptor {
	t.Helper()
	r, err := name.NewDigest(repo+"@"+subject.String(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Referrers(r, opts...)
	if err != nil {
		t.Fatalf("signtest: referrers of %s: %v", r, err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return m.Manifests
}

// Mirror is one source → mirrors rule (an IDMS entry).
type Mirror struct {
	Source  string
	Mirrors []string
}

// Consumer decides whether images may be pulled as CRI-O would: containers/image
// (the verifier command beside this package) reads the image through a
// registries.conf made of mirror rules (every location insecure, digest-only
// mirrors), with sigstore attachments on, and judges it by a policy that
// requires a sigstore signature by a key for the source hosts.
type Consumer struct {
	verifier, conf, policy, regD string
}

// NewConsumer builds the verifier (go build -tags containers_image_openpgp)
// and writes the consumer's configuration.
func NewConsumer(t testing.TB, rules []Mirror, publicKey string) *Consumer {
	t.Helper()
	dir := t.TempDir()
	c := &Consumer{verifier: filepath.Join(dir, "verifier"), regD: registriesD(t)}
	_, self, _, _ := runtime.Caller(0)
	if out, err := run(t, "go", "build", "-tags", "containers_image_openpgp", "-o", c.verifier, filepath.Join(filepath.Dir(self), "verifier")); err != nil {
		t.Fatalf("signtest: build the verifier: %v\n%s", err, out)
	}
	var conf strings.Builder
	hosts := map[string]bool{}
	for _, r := range rules {
		fmt.Fprintf(&conf, "[[registry]]\nprefix = %q\nlocation = %q\ninsecure = true\n", r.Source, r.Source)
		for _, m := range r.Mirrors {
			fmt.Fprintf(&conf, "[[registry.mirror]]\nlocation = %q\ninsecure = true\npull-from-mirror = \"digest-only\"\n", m)
		}
		hosts[strings.SplitN(r.Source, "/", 2)[0]] = true
	}
	scopes := map[string]any{}
	for h := range hosts {
		scopes[h] = []any{map[string]any{"type": "sigstoreSigned", "keyPath": publicKey, "signedIdentity": map[string]any{"type": "matchRepository"}}}
	}
	policy := map[string]any{
		"default":    []any{map[string]any{"type": "reject"}},
		"transports": map[string]any{"docker": scopes},
	}
	pj, _ := json.MarshalIndent(policy, "", "  ")
	c.conf, c.policy = filepath.Join(dir, "registries.conf"), filepath.Join(dir, "policy.json")
	if err := os.WriteFile(c.conf, []byte(conf.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.policy, pj, 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// Pull asks whether ref (by its source name, "host/repo@sha256:…") may be
// pulled; the error carries the policy's reason.
func (c *Consumer) Pull(t testing.TB, ref string) error {
	t.Helper()
	out, err := run(t, c.verifier, c.conf, c.regD, c.policy, location.Docker(ref).String())
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(out))
	}
	return nil
}

// CopyManifest copies the manifest from ("host/repo:tag", plain HTTP) with its
// blobs to to ("host/repo:tag"), byte for byte, with go-containerregistry.
func CopyManifest(t testing.TB, from, to string) {
	t.Helper()
	src, err := name.ParseReference(from, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := name.ParseReference(to, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(src)
	if err != nil {
		t.Fatalf("signtest: read %s: %v", from, err)
	}
	if err := remote.Write(dst, img); err != nil {
		t.Fatalf("signtest: write %s: %v", to, err)
	}
}
