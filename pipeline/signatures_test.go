package pipeline_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/opencontainers/go-digest"
	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/manifests"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/signature"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
)

// signedEnv is a source registry holding a signed image with an SBOM, a signed
// multi-arch index, an unsigned image and an image whose signature was replaced
// by another image's.
type signedEnv struct {
	src                               *registrytest.Registry
	key                               signtest.Key
	signed, index, unsigned, tampered imagetest.Pushed
	sbom                              digest.Digest
	cfg                               string
}

func newSignedEnv(t *testing.T) *signedEnv {
	t.Helper()
	e := &signedEnv{src: registrytest.Start(t), key: signtest.NewKey(t)}
	h := e.src.Host()
	e.signed = imagetest.MustPush(t, h+"/apps/signed:1.0", fakeimage.Spec{Seed: 11, Layers: 2})
	e.index = imagetest.MustPush(t, h+"/apps/multi:2.0", fakeimage.Spec{Seed: 12, Layers: 1, Platforms: []string{"linux/amd64", "linux/arm64"}})
	e.unsigned = imagetest.MustPush(t, h+"/apps/unsigned:1.0", fakeimage.Spec{Seed: 13, Layers: 1})
	e.tampered = imagetest.MustPush(t, h+"/apps/tampered:1.0", fakeimage.Spec{Seed: 14, Layers: 1})
	signtest.Sign(t, e.key, h+"/apps/signed", e.signed.Digest)
	for _, d := range e.index.Manifests { // cosign sign --recursive: the index and each instance
		signtest.Sign(t, e.key, h+"/apps/multi", d)
	}
	// The tampered image carries the signed image's signature: valid bytes,
	// another image.
	reg := registry.New(registry.Options{})
	signtest.CopyManifest(t, h+"/apps/signed:sha256-"+e.signed.Digest.Encoded()+".sig", h+"/apps/tampered:sha256-"+e.tampered.Digest.Encoded()+".sig")
	e.sbom = signtest.PushSBOM(t, h+"/apps/signed", v1.Descriptor{MediaType: "application/vnd.oci.image.manifest.v1+json",
		Digest: v1.Hash{Algorithm: "sha256", Hex: e.signed.Digest.Encoded()}, Size: manifestSize(t, reg, h+"/apps/signed", e.signed.Digest)}, []byte(`{"spdxVersion":"SPDX-2.3"}`))
	cfg := fmt.Sprintf(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  additionalImages:
  - name: %s
  - name: %s
  - name: %s
  - name: %s
`, e.ref(e.signed), e.ref(e.index), e.ref(e.unsigned), e.ref(e.tampered))
	e.cfg = filepath.Join(t.TempDir(), "imageset.yaml")
	if err := os.WriteFile(e.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// ref is the by-digest source reference of im (what the configuration names,
// so that the cluster resources are an IDMS).
func (e *signedEnv) ref(im imagetest.Pushed) string {
	return imagetest.Repo(im.Ref) + "@" + im.Digest.String()
}

func manifestSize(t *testing.T, reg *registry.Client, repo string, d digest.Digest) int64 {
	t.Helper()
	m, err := reg.Manifest(context.Background(), repo, d.String())
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(m.Raw))
}

// idmsRules reads the IDMS airlock wrote into mirror rules.
func idmsRules(t *testing.T, res *pipeline.Result) []signtest.Mirror {
	t.Helper()
	var out []signtest.Mirror
	for _, f := range res.ClusterResources {
		if !strings.HasPrefix(filepath.Base(f), "idms") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var idms struct {
			Spec struct {
				ImageDigestMirrors []struct {
					Source  string   `json:"source"`
					Mirrors []string `json:"mirrors"`
				} `json:"imageDigestMirrors"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal(b, &idms); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, m := range idms.Spec.ImageDigestMirrors {
			out = append(out, signtest.Mirror{Source: m.Source, Mirrors: m.Mirrors})
		}
	}
	if len(out) == 0 {
		t.Fatalf("no IDMS among %v", res.ClusterResources)
	}
	return out
}

// checkConsumer stops the source, then pulls every image by its source name
// through the IDMS with a policy requiring the key's signature: the signed
// ones pull, the unsigned and the tampered ones are refused.
func (e *signedEnv) checkConsumer(t *testing.T, res *pipeline.Result, dst *registrytest.Registry) {
	t.Helper()
	c := signtest.NewConsumer(t, idmsRules(t, res), e.key.Public)
	e.src.Stop()
	for _, im := range []imagetest.Pushed{e.signed, e.index} {
		if err := c.Pull(t, imagetest.Repo(im.Ref)+"@"+im.Digest.String()); err != nil {
			t.Errorf("signed %s does not pull through the mirror: %v", im.Ref, err)
		}
	}
	for _, im := range []imagetest.Pushed{e.unsigned, e.tampered} {
		err := c.Pull(t, imagetest.Repo(im.Ref)+"@"+im.Digest.String())
		if err == nil {
			t.Errorf("%s pulls although its signature is missing or not its own", im.Ref)
		} else if !strings.Contains(err.Error(), "ignature") {
			t.Errorf("%s refused for another reason than its signature: %v", im.Ref, err)
		}
	}
	// The SBOM is at the destination with its digest, found by an independent
	// client as a referrer of the image.
	dstRepo := ""
	for _, im := range res.Plan.Images {
		if im.Source == e.ref(e.signed) {
			dstRepo = im.DestRepo
		}
	}
	found := false
	for _, d := range signtest.Referrers(t, dstRepo, e.signed.Digest) {
		found = found || (d.Digest.String() == e.sbom.String() && d.ArtifactType == signtest.SBOMArtifactType)
	}
	if !found {
		t.Errorf("SBOM %s is not a referrer of %s@%s at the destination", e.sbom, dstRepo, e.signed.Digest)
	}
	_ = dst
}

// checkOutcomes checks results.json's signature column.
func (e *signedEnv) checkOutcomes(t *testing.T, res *pipeline.Result) {
	t.Helper()
	want := map[string]string{e.ref(e.signed): mirror.Signed, e.ref(e.index): mirror.Signed, e.ref(e.unsigned): mirror.Unsigned, e.ref(e.tampered): mirror.Signed}
	attachments := 0
	for _, o := range res.Images {
		if o.Kind == mirror.KindAttachment {
			attachments++
			if o.Status == "failed" {
				t.Errorf("attachment %s failed: %s", o.Source, o.Error)
			}
			continue
		}
		if w, ok := want[o.Source]; ok && o.Signature != w {
			t.Errorf("%s: signature %q, want %q", o.Source, o.Signature, w)
		}
	}
	// signed: .sig + SBOM; multi: 3 .sig (index and 2 instances); tampered:
	// .sig (another image's).
	if attachments != 6 {
		t.Errorf("%d attachments carried, want 6: %+v", attachments, res.Images)
	}
}

func TestSignaturesMirrorToMirror(t *testing.T) {
	t.Parallel()
	e := newSignedEnv(t)
	dst := registrytest.Start(t)
	o := opts(e.cfg)
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	o.Workspace = location.File(t.TempDir())
	o.Signatures.Key = e.key.Public
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	e.checkImagePolicy(t, res)
	e.checkOutcomes(t, res)
	t.Logf("discovery: %+v warnings %v", *res.Signatures, res.Warnings)
	e.checkConsumer(t, res, dst)
}

// The archive carries the attachments and is signed (--sign-key): disk-to-mirror
// with --archive-key refuses it under another key, and pushes it under its own.
func TestSignaturesDiskToMirror(t *testing.T) {
	t.Parallel()
	e := newSignedEnv(t)
	target := t.TempDir()
	archiveKey, archivePub := archiveKeyPair(t)
	_, otherPub := archiveKeyPair(t)
	o := opts(e.cfg)
	o.Destination.Location = location.File(target)
	o.Archive.SignKey = archiveKey
	if _, err := pipeline.Mirror(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	e.src.Stop()
	dst := registrytest.Start(t)
	o = opts(e.cfg)
	o.Archive.From = location.File(filepath.Join(target, "batch-0001"))
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	o.Workspace = location.File(t.TempDir())
	o.Archive.VerifyKey = otherPub
	if _, err := pipeline.Mirror(context.Background(), o); !errors.Is(err, archive.ErrSignature) {
		t.Fatalf("disk-to-mirror of an archive signed by another key: %v", err)
	}
	o.Archive.VerifyKey = archivePub
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	e.checkOutcomes(t, res)
	e.checkConsumer(t, res, dst)
}

func TestSignaturesModes(t *testing.T) {
	t.Parallel()
	e := newSignedEnv(t)
	for _, tc := range []struct {
		mode        signature.Mode
		failed      []string
		attachments int
	}{
		{signature.Required, []string{e.ref(e.unsigned)}, 6},
		{signature.Off, nil, 0},
		{signature.BestEffort, nil, 6},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			dst := registrytest.Start(t)
			o := opts(e.cfg)
			o.Destination.Location = location.Docker(dst.Host() + "/mirror")
			o.Workspace = location.File(t.TempDir())
			o.Signatures.Mode = tc.mode
			res, err := pipeline.Mirror(context.Background(), o)
			if len(tc.failed) > 0 != errors.Is(err, pipeline.ErrIncomplete) {
				t.Fatalf("err = %v, want failures %v", err, tc.failed)
			}
			var failed []string
			attachments := 0
			for _, o := range res.Images {
				if o.Status == "failed" {
					failed = append(failed, o.Source)
				}
				if o.Kind == mirror.KindAttachment {
					attachments++
				}
			}
			if fmt.Sprint(failed) != fmt.Sprint(tc.failed) || attachments != tc.attachments {
				t.Errorf("failed %v, attachments %d; want %v, %d", failed, attachments, tc.failed, tc.attachments)
			}
			listed := false
			for _, w := range res.Notes {
				listed = listed || strings.Contains(w, e.ref(e.unsigned))
			}
			if listed != (tc.mode == signature.BestEffort) {
				t.Errorf("unsigned image listed in the notes: %v, want %v (%v)", listed, tc.mode == signature.BestEffort, res.Notes)
			}
			for _, w := range res.Warnings {
				if strings.Contains(w, "no signature") {
					t.Errorf("unsigned images are a warning (logged at --log-level warn): %s", w)
				}
			}
		})
	}
}

// A dry run maps and counts the attachments: mapping.txt names each, and the
// bytes to send are those of the images and their attachments (more than with
// --signatures off, which maps none).
func TestSignaturesDryRun(t *testing.T) {
	t.Parallel()
	e := newSignedEnv(t)
	dst := registrytest.Start(t)
	run := func(mode signature.Mode) (*pipeline.Result, string) {
		ws := t.TempDir()
		o := opts(e.cfg)
		o.Destination.Location = location.Docker(dst.Host() + "/mirror")
		o.Workspace = location.File(ws)
		o.Run.DryRun, o.Signatures.Mode = true, mode
		res, err := pipeline.Mirror(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(ws, "working-dir", "dry-run", "mapping.txt"))
		if err != nil {
			t.Fatal(err)
		}
		return res, string(b)
	}
	with, mapping := run(signature.BestEffort)
	without, mappingOff := run(signature.Off)
	sigTag := "sha256-" + e.signed.Digest.Encoded() + ".sig"
	if !strings.Contains(mapping, ":"+sigTag+"\n") || !strings.Contains(mapping, "@"+e.sbom.String()+"\n") {
		t.Errorf("mapping.txt lacks the signature %s or the SBOM %s:\n%s", sigTag, e.sbom, mapping)
	}
	if strings.Contains(mappingOff, ".sig") {
		t.Errorf("--signatures off maps attachments:\n%s", mappingOff)
	}
	if with.DryRun.Images != without.DryRun.Images+6 || with.DryRun.BytesToSend <= without.DryRun.BytesToSend {
		t.Errorf("dry run with attachments: %d images, %d bytes; without: %d images, %d bytes", with.DryRun.Images, with.DryRun.BytesToSend, without.DryRun.Images, without.DryRun.BytesToSend)
	}
	t.Logf("dry run: %d images %d bytes to send with attachments, %d images %d bytes without; discovery %+v",
		with.DryRun.Images, with.DryRun.BytesToSend, without.DryRun.Images, without.DryRun.BytesToSend, *with.Signatures)
}

// checkImagePolicy: --signature-key wrote one ClusterImagePolicy whose scopes
// are the four source repositories and whose key is the signing key.
func (e *signedEnv) checkImagePolicy(t *testing.T, res *pipeline.Result) {
	t.Helper()
	checkPolicyKey(t, res, e.key.Public, []string{imagetest.Repo(e.index.Ref), imagetest.Repo(e.signed.Ref), imagetest.Repo(e.tampered.Ref), imagetest.Repo(e.unsigned.Ref)})
}

// checkPolicyKey: the ClusterImagePolicy written requires keyFile (given by
// --signature-key, or taken from the policy's one sigstore key) for scopes.
func checkPolicyKey(t *testing.T, res *pipeline.Result, keyFile string, scopes []string) {
	t.Helper()
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.ClusterResources {
		if !strings.HasPrefix(filepath.Base(f), "cip-") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cip manifests.ClusterImagePolicy
		if err := yaml.UnmarshalStrict(b, &cip); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if fmt.Sprint(cip.Spec.Scopes) != fmt.Sprint(scopes) || string(cip.Spec.Policy.RootOfTrust.PublicKey.KeyData) != string(key) {
			t.Errorf("%s: scopes %v (want %v), key %q", f, cip.Spec.Scopes, scopes, cip.Spec.Policy.RootOfTrust.PublicKey.KeyData)
		}
		return
	}
	t.Errorf("no ClusterImagePolicy from the policy's key among %v", res.ClusterResources)
}

// archiveKeyPair writes an Ed25519 key pair as openssl genpkey / pkey -pubout do.
func archiveKeyPair(t *testing.T) (priv, pub string) {
	t.Helper()
	p, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := x509.MarshalPKIXPublicKey(p)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	priv, pub = filepath.Join(dir, "archive.key"), filepath.Join(dir, "archive.pub")
	if err := os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pd}), 0o644); err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// Deleting an image plans its attachments too: the history records them as
// wanted for the same reasons as the image.
func TestSignaturesDeletePlan(t *testing.T) {
	t.Parallel()
	e := newSignedEnv(t)
	dst := registrytest.Start(t)
	ws := t.TempDir()
	o := opts(e.cfg)
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	o.Workspace = location.File(ws)
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{e.signed.Digest.String(): true}
	for _, im := range res.Plan.Images {
		if im.Attachment != nil && im.Attachment.Of == e.ref(e.signed) {
			want[im.Digest.String()] = true
		}
	}
	if len(want) != 3 {
		t.Fatalf("signed image with %d attachments, want 2", len(want)-1)
	}
	delCfg := filepath.Join(t.TempDir(), "delete.yaml")
	if err := os.WriteFile(delCfg, []byte("apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\ndelete:\n  additionalImages:\n  - name: "+e.ref(e.signed)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dres, err := pipeline.Delete(context.Background(), deletion.Options{Generate: true, ConfigPath: delCfg, Workspace: location.File(ws), Destination: location.Docker(dst.Host() + "/mirror")})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range dres.Plan.Manifests {
		got[m.Digest.String()] = true
	}
	for d := range want {
		if !got[d] {
			t.Errorf("delete plan lacks %s (image or attachment); plans %v", d, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("delete plan has %d manifests, want the image and its 2 attachments: %v", len(got), got)
	}
}

// What looking for attachments costs on a catalog whose images have none (the
// common case): the source requests of a best-effort run against an off run,
// bounded by one tag listing per repository, one manifest read and one
// referrers call per image and per child of an index.
func TestSignaturesCost(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cfg := e.config(t, "    - name: foo\n    - name: bar\n")
	count := func(mode signature.Mode) (pipeline.Result, registrytest.Counts) {
		dst := registrytest.Start(t)
		o := opts(cfg)
		o.Destination.Location = location.Docker(dst.Host() + "/mirror")
		o.Workspace = location.File(t.TempDir())
		o.Signatures.Mode = mode
		e.src.Reset()
		res, err := pipeline.Mirror(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		return *res, e.src.Counts()
	}
	off, offCounts := count(signature.Off)
	on, onCounts := count(signature.BestEffort)
	extra := func(c registrytest.Counts) int64 {
		var n int64
		for _, v := range c.ByPath {
			n += v
		}
		return n
	}
	images, repos := 0, map[string]bool{}
	for _, im := range on.Plan.Images {
		if im.Kind == mirror.KindOperator || im.Kind == mirror.KindGeneric {
			images++
			repos[im.SourceRepo] = true
		}
	}
	more := extra(onCounts) - extra(offCounts)
	t.Logf("%d images in %d repositories: %d source requests without attachments, %d with (+%d; discovery counted %d); unsigned listed: %v; bytes sent %d vs %d",
		images, len(repos), extra(offCounts), extra(onCounts), more, on.Signatures.Requests, len(on.Warnings) > 0, on.BytesSent, off.BytesSent)
	if on.Signatures.Images != images || on.Signatures.Attachments != 0 || on.Signatures.Signed != 0 {
		t.Errorf("discovery %+v on %d unsigned images", *on.Signatures, images)
	}
	// At most: a tag listing per repository, a manifest read per image, a
	// referrers call per image and per child (an index has 2 here).
	if bound := int64(len(repos) + images + 3*images); more > bound || more < int64(len(repos)) {
		t.Errorf("%d extra source requests; want between %d and %d", more, len(repos), bound)
	}
}
