package signature

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
)

// TestCheckMirrorThenDiskToMirror is the release source's use: the signatures
// fetched from a store at mirror time are verified, carried as files, and
// verified again from those files on the far side.
func TestCheckMirrorThenDiskToMirror(t *testing.T) {
	k := signtest.NewReleaseKey(t, "ed25519")
	keys, err := ParseKeys(k.Armored)
	if err != nil {
		t.Fatal(err)
	}
	d1, d2 := digest.FromString("4.15.1"), digest.FromString("4.15.2")
	srv := signtest.NewSignatureStore(t)
	srv.Put(d1, k.SignRelease(t, ocpRelease+":4.15.1-x86_64", d1))
	// The measured oc-mirror case: 4.15.1's signature served at 4.15.2's location.
	srv.Put(d2, k.SignRelease(t, ocpRelease+":4.15.1-x86_64", d1))
	store, err := NewStore(StoreOptions{URL: srv.URL, Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	res, err := Check(ctx, store, Release{Name: "4.15.1", Payload: ocpRelease + "@" + d1.String()}, CheckOptions{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped || len(res.Signatures) != 1 || res.Verified.Payload.Reference != ocpRelease+":4.15.1-x86_64" {
		t.Fatalf("result = %+v", res)
	}

	_, err = Check(ctx, store, Release{Name: "4.15.2", Payload: ocpRelease + "@" + d2.String()}, CheckOptions{Keys: keys})
	var ref *Refusal
	if !errors.As(err, &ref) || !strings.HasPrefix(err.Error(), "release 4.15.2 refused: signature-1: it signs "+d1.String()) {
		t.Fatalf("4.15.1's signature at 4.15.2's location: %v", err)
	}

	// Carried in the archive, checked again.
	dir := t.TempDir()
	for i, s := range res.Signatures {
		if err := os.WriteFile(filepath.Join(dir, FileName(d1, i+1)), s, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Check(ctx, FromFiles(os.DirFS(dir)), Release{Name: "4.15.1", Payload: ocpRelease + "@" + d1.String()}, CheckOptions{Keys: keys}); err != nil {
		t.Fatalf("disk to mirror: %v", err)
	}
	// A signature altered in the archive is refused there.
	name := filepath.Join(dir, FileName(d1, 1))
	b, _ := os.ReadFile(name)
	b[len(b)-10] ^= 0x40
	if err := os.WriteFile(name, b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Check(ctx, FromFiles(os.DirFS(dir)), Release{Name: "4.15.1", Payload: ocpRelease + "@" + d1.String()}, CheckOptions{Keys: keys})
	if !errors.As(err, &ref) {
		t.Fatalf("an altered carried signature: %v", err)
	}
	// Nothing carried.
	_, err = Check(ctx, FromFiles(os.DirFS(t.TempDir())), Release{Name: "4.15.1", Payload: ocpRelease + "@" + d1.String()}, CheckOptions{Keys: keys})
	if err == nil || err.Error() != "release 4.15.1 refused: no signature was found in the signatures carried in the archive" {
		t.Fatalf("nothing carried: %v", err)
	}
}

func TestCheckIgnore(t *testing.T) {
	d := digest.FromString("unsigned")
	srv := signtest.NewSignatureStore(t)
	srv.Put(d, []byte("not a signature"))
	store, err := NewStore(StoreOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	res, err := Check(context.Background(), store, Release{Payload: ocpRelease + "@" + d.String()},
		CheckOptions{Ignore: true, Log: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil || !res.Skipped || len(res.Signatures) != 1 {
		t.Fatalf("Check with Ignore = %+v, %v", res, err)
	}
	if !strings.Contains(logged.String(), "NOT verified") || !strings.Contains(logged.String(), d.String()) {
		t.Errorf("no loud warning: %q", logged.String())
	}
}

func TestCheckPayloadErrors(t *testing.T) {
	store := FromFiles(os.DirFS(t.TempDir()))
	for _, p := range []string{ocpRelease + ":4.15.0-x86_64", ocpRelease + "@sha256:short"} {
		_, err := Check(context.Background(), store, Release{Name: "4.15.0", Payload: p}, CheckOptions{Keys: DefaultKeys()})
		var ref *Refusal
		if !errors.As(err, &ref) || !strings.HasPrefix(err.Error(), "release 4.15.0 refused: ") {
			t.Errorf("payload %q: %v", p, err)
		}
	}
	// A tag before the digest is ignored.
	repo, d, err := splitPayload("docker://" + ocpRelease + ":4.15.0@" + ocp4150Digest.String())
	if err != nil || repo != ocpRelease || d != ocp4150Digest {
		t.Errorf("splitPayload = %q %q %v", repo, d, err)
	}
}
