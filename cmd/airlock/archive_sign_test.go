package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

func writeKeyPair(t *testing.T) (priv, pub string) {
	t.Helper()
	p, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	kd, _ := x509.MarshalPKCS8PrivateKey(k)
	pd, _ := x509.MarshalPKIXPublicKey(p)
	dir := t.TempDir()
	priv, pub = filepath.Join(dir, "k"), filepath.Join(dir, "k.pub")
	if err := os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pd}), 0o644); err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

// mirror-to-disk --sign-key, then archive verify --key: the right key passes,
// another key and a lone chunk are refused.
func TestArchiveVerifyKey(t *testing.T) {
	src := registrytest.Start(t)
	img := imagetest.MustPush(t, src.Host()+"/apps/tool:1.0", fakeimage.Spec{Seed: 3, Layers: 1})
	cfg := filepath.Join(t.TempDir(), "imageset.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - name: %s\n", img.Ref)), 0o644); err != nil {
		t.Fatal(err)
	}
	priv, pub := writeKeyPair(t)
	_, other := writeKeyPair(t)
	target := t.TempDir()
	ctx := context.Background()
	if _, stderr, err := runCmd(ctx, "mirror", "-c", cfg, "--sign-key", priv, "file://"+target); err != nil {
		t.Fatalf("mirror-to-disk: %v\n%s", err, stderr)
	}
	batch := filepath.Join(target, "batch-0001")
	if out, _, err := runCmd(ctx, "archive", "verify", "--key", pub, batch); err != nil || !strings.Contains(out, "OK") {
		t.Fatalf("verify with the signing key: %v\n%s", err, out)
	}
	if _, _, err := runCmd(ctx, "archive", "verify", "--key", other, batch); err == nil || !strings.Contains(err.Error(), "signed by key") {
		t.Errorf("verify with another key: %v", err)
	}
	if _, _, err := runCmd(ctx, "archive", "verify", "--key", pub, filepath.Join(batch, "airlock_000001.tar")); err == nil || !strings.Contains(err.Error(), "whole archive") {
		t.Errorf("verify --key of a chunk: %v", err)
	}
	if _, stderr, err := runCmd(ctx, "mirror", "-c", cfg, "--sign-key", pub, "file://"+t.TempDir()); err == nil || !strings.Contains(err.Error(), "PUBLIC KEY") {
		t.Errorf("mirror-to-disk with a public key as --sign-key: %v\n%s", err, stderr)
	}
}
