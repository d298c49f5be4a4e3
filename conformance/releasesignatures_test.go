//go:build containers_image_openpgp

package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/containers/image/v5/directory"
	"github.com/containers/image/v5/image"
	cisig "github.com/containers/image/v5/signature"
	"github.com/opencontainers/go-digest"
	//lint:ignore SA1019 the frozen package oc-mirror and containers/image verify with: measured here
	xopenpgp "golang.org/x/crypto/openpgp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/manifests"
	"github.com/airlock-mirror/airlock/release/signature"
)

// The consumer of the release signature ConfigMaps is the cluster-version
// operator, through openshift/library-go's pkg/verify (its configmap store and
// release verifier). library-go cannot be had from the module proxy
// (`go get github.com/openshift/library-go@v0.0.0-20260821222658-93ac9206ae34`
// and `go list -m -versions github.com/openshift/library-go` both answer 403
// "This module version is not available"), so the independent consumer here is
// containers/image's policy-based verification (signedBy, the code CRI-O and
// podman judge simple signatures with), fed the way the CVO's configmap store
// is fed: every ConfigMap in openshift-config-managed carrying the label
// release.openshift.io/verification-signatures, binaryData keys starting with
// "sha256-<hex>-" for the release digest.

const releaseRepo = "quay.io/openshift-release-dev/ocp-release"

// releaseManifest is a payload manifest: its digest is what is signed.
func releaseManifest(version string) []byte {
	return []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:` +
		digest.FromString(version).Encoded() + `","size":2},"layers":[]}`)
}

// airlockConfigMaps runs airlock's side: the release signatures fetched from a
// loopback store and verified (signature.Check), then the ConfigMaps built
// (manifests.BuildReleaseSignatures); it returns the YAML file airlock writes.
func airlockConfigMaps(t *testing.T, k signtest.ReleaseKey, served map[digest.Digest][][]byte, payloads []digest.Digest) []byte {
	t.Helper()
	keys, err := signature.ParseKeys(k.Armored)
	if err != nil {
		t.Fatal(err)
	}
	srv := signtest.NewSignatureStore(t)
	for d, sigs := range served {
		srv.Put(d, sigs...)
	}
	store, err := signature.NewStore(signature.StoreOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var rs []manifests.ReleaseSignatures
	for _, d := range payloads {
		res, err := signature.Check(context.Background(), store, signature.Release{Payload: releaseRepo + "@" + d.String()}, signature.CheckOptions{Keys: keys})
		if err != nil {
			t.Fatalf("airlock refuses a release the test signed: %v", err)
		}
		rs = append(rs, manifests.ReleaseSignatures{Digest: d.String(), Signatures: res.Signatures})
	}
	_, files, err := manifests.BuildReleaseSignatures(rs)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f.Name, ".yaml") {
			return f.Data
		}
	}
	t.Fatal("no YAML file")
	return nil
}

// cvoSignatures reads the ConfigMaps as the CVO's configmap store does and
// returns the signatures it would offer for d.
func cvoSignatures(t *testing.T, yamlDocs []byte, d digest.Digest) [][]byte {
	t.Helper()
	var out [][]byte
	for _, doc := range strings.Split(string(yamlDocs), "\n---\n") {
		var cm corev1.ConfigMap
		if err := yaml.UnmarshalStrict([]byte(doc), &cm); err != nil {
			t.Fatalf("not a v1 ConfigMap: %v\n%s", err, doc)
		}
		if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Namespace != "openshift-config-managed" {
			t.Fatalf("ConfigMap %s: %s %s in %q", cm.Name, cm.APIVersion, cm.Kind, cm.Namespace)
		}
		if _, ok := cm.Labels["release.openshift.io/verification-signatures"]; !ok {
			continue
		}
		prefix := string(d.Algorithm()) + "-" + d.Encoded() + "-"
		for n := 1; ; n++ {
			b, ok := cm.BinaryData[prefix+strconv.Itoa(n)]
			if !ok {
				break
			}
			out = append(out, b)
		}
	}
	return out
}

// consumerAccepts is containers/image's verdict on the payload (manifest)
// with these signatures, under a policy that requires a signature by the
// key for the exact release identity.
func consumerAccepts(t *testing.T, armoredKey, manifest []byte, sigs [][]byte, identity string) error {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, s := range sigs {
		if err := os.WriteFile(filepath.Join(dir, "signature-"+strconv.Itoa(i+1)), s, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	policy, _ := json.Marshal(map[string]any{
		"default": []any{map[string]any{"type": "reject"}},
		"transports": map[string]any{"dir": map[string]any{"": []any{map[string]any{
			"type": "signedBy", "keyType": "GPGKeys", "keyData": base64.StdEncoding.EncodeToString(armoredKey),
			"signedIdentity": map[string]any{"type": "exactReference", "dockerReference": identity},
		}}}},
	})
	p, err := cisig.NewPolicyFromBytes(policy)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := cisig.NewPolicyContext(p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pc.Destroy() }()
	ref, err := directory.NewReference(dir)
	if err != nil {
		t.Fatal(err)
	}
	src, err := ref.NewImageSource(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	_, err = pc.IsRunningImageAllowed(context.Background(), image.UnparsedInstance(src, nil))
	return err
}

func TestReleaseSignatureConfigMapConsumer(t *testing.T) {
	k := signtest.NewReleaseKey(t, "rsa") // containers/image's openpgp reads RSA, not ed25519
	m1, m2 := releaseManifest("4.99.1"), releaseManifest("4.99.2")
	d1, d2 := digest.FromBytes(m1), digest.FromBytes(m2)
	id1, id2 := releaseRepo+":4.99.1-x86_64", releaseRepo+":4.99.2-x86_64"
	sig1, sig2 := k.SignRelease(t, id1, d1), k.SignRelease(t, id2, d2)
	cms := airlockConfigMaps(t, k, map[digest.Digest][][]byte{d1: {sig1}, d2: {[]byte("junk"), sig2}}, []digest.Digest{d1, d2})

	// Accepted: each release with what the ConfigMaps hold for its digest.
	for _, r := range []struct {
		m  []byte
		d  digest.Digest
		id string
	}{{m1, d1, id1}, {m2, d2, id2}} {
		sigs := cvoSignatures(t, cms, r.d)
		if len(sigs) != 1 {
			t.Fatalf("%s: %d signatures in the ConfigMaps (airlock keeps the verified ones)", r.d, len(sigs))
		}
		if err := consumerAccepts(t, k.Armored, r.m, sigs, r.id); err != nil {
			t.Errorf("containers/image refuses airlock's ConfigMap for %s: %v", r.d, err)
		}
	}

	// Refused: 4.99.1's signature offered for 4.99.2.
	if err := consumerAccepts(t, k.Armored, m2, cvoSignatures(t, cms, d1), id1); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("containers/image on 4.99.1's signature for 4.99.2's manifest: %v", err)
	}
	// Refused: a ConfigMap tampered with (one bit of the signature flipped).
	var cm corev1.ConfigMap
	for _, doc := range strings.Split(string(cms), "\n---\n") {
		if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
			t.Fatal(err)
		}
		if cm.Name == "sha256-"+d1.Encoded() {
			break
		}
	}
	for key, b := range cm.BinaryData {
		b[len(b)-20] ^= 0x01
		cm.BinaryData[key] = b
	}
	tampered, err := yaml.Marshal(cm)
	if err != nil {
		t.Fatal(err)
	}
	first1 := cvoSignatures(t, tampered, d1)
	if len(first1) != 1 {
		t.Fatalf("tampered ConfigMap holds %d signatures for %s", len(first1), d1)
	}
	if err := consumerAccepts(t, k.Armored, m1, first1, id1); err == nil || !strings.Contains(err.Error(), "invalid signature") {
		t.Errorf("containers/image on a tampered signature: %v", err)
	}
	// Refused by both: a key the consumer does not trust.
	other := signtest.NewReleaseKey(t, "rsa")
	if err := consumerAccepts(t, other.Armored, m1, cvoSignatures(t, cms, d1), id1); err == nil || !strings.Contains(err.Error(), "Key not found") {
		t.Errorf("containers/image on a signature by a key it was not given: %v", err)
	}
}

// TestReleaseSignatureEd25519 measures why airlock does not verify with
// golang.org/x/crypto/openpgp (what oc-mirror's release check and
// containers/image's containers_image_openpgp mechanism use): it cannot read
// an ed25519 key ("unsupported feature: public key type: 22"), which airlock
// verifies with.
// Should this test fail, x/crypto/openpgp learned ed25519 and
// docs/release-signatures.md must say so.
func TestReleaseSignatureEd25519(t *testing.T) {
	k := signtest.NewReleaseKey(t, "ed25519")
	if _, err := xopenpgp.ReadArmoredKeyRing(bytes.NewReader(k.Armored)); err == nil {
		t.Fatal("x/crypto/openpgp reads an ed25519 key")
	} else {
		t.Logf("x/crypto/openpgp on an ed25519 key: %v", err)
	}
	rsa := signtest.NewReleaseKey(t, "rsa")
	if _, err := xopenpgp.ReadArmoredKeyRing(bytes.NewReader(rsa.Armored)); err != nil {
		t.Fatalf("x/crypto/openpgp does not read the RSA key either: the ed25519 case above proves nothing: %v", err)
	}
	keys, err := signature.ParseKeys(k.Armored)
	if err != nil {
		t.Fatal(err)
	}
	d := digest.FromBytes(releaseManifest("4.99.3"))
	if _, err := signature.Verify([][]byte{k.SignRelease(t, releaseRepo+":4.99.3-x86_64", d)}, d, releaseRepo, keys); err != nil {
		t.Errorf("airlock refuses an ed25519 signature: %v", err)
	}
}
