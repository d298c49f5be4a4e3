package registry

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

func TestRegistryAuthFileAndTLS(t *testing.T) {
	reg := registrytest.Start(t, registrytest.WithTLS(), registrytest.WithBasicAuth("alice", "s3cret-pw"))
	tr := &http.Transport{TLSClientConfig: reg.TLSConfig()}
	p := imagetest.MustPush(t, reg.Host()+"/sec/app:1", fakeimage.Spec{Seed: 1, Layers: 1},
		remote.WithTransport(tr), remote.WithAuth(&authn.Basic{Username: "alice", Password: "s3cret-pw"}))
	dir := t.TempDir()
	authFile := filepath.Join(dir, "auth.json")
	auth := base64.StdEncoding.EncodeToString([]byte("alice:s3cret-pw"))
	if err := os.WriteFile(authFile, []byte(`{"auths":{"`+reg.Host()+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	badFile := filepath.Join(dir, "bad.json")
	bad := base64.StdEncoding.EncodeToString([]byte("alice:wrong-pw"))
	os.WriteFile(badFile, []byte(`{"auths":{"`+reg.Host()+`":{"auth":"`+bad+`"}}}`), 0o600)
	ctx := context.Background()

	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"authfile and CA", Options{AuthFile: authFile, RootCAs: reg.CertPool()}, ""},
		{"skip verify", Options{AuthFile: authFile, SkipTLSVerify: true}, ""},
		{"untrusted certificate", Options{AuthFile: authFile}, "certificate"},
		{"wrong password", Options{AuthFile: badFile, RootCAs: reg.CertPool()}, "401"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Retry = &retry.Policy{Base: mirrortest.FastRetry.Base, Max: mirrortest.FastRetry.Max}
			r := New(tc.opts)
			d, err := r.Resolve(ctx, reg.Host()+"/sec/app:1")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "wrong-pw") || strings.Contains(err.Error(), bad) {
					t.Fatalf("error leaks a secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Digest != p.Digest || d.MediaType != p.MediaType {
				t.Fatalf("resolved %+v, want %s", d, p.Digest)
			}
		})
	}
}

func TestRegistryRefusesPlainHTTPWithTLSVerify(t *testing.T) {
	r := New(Options{Retry: retry.Retries(0)})
	// 192.0.2.1 (TEST-NET) is not loopback: plain HTTP must be refused before dialing.
	g := &schemeGuard{inner: http.DefaultTransport, allow: r.allowHTTP}
	req, _ := http.NewRequest(http.MethodGet, "http://192.0.2.1:5000/v2/", nil)
	if _, err := g.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "tls-verify") {
		t.Fatalf("err %v, want refusal", err)
	}
	for host, want := range map[string]bool{"127.0.0.1:5000": true, "localhost:80": true, "[::1]:5000": true, "10.0.0.1:5000": false, "quay.io": false} {
		if got := r.allowHTTP(host); got != want {
			t.Errorf("allowHTTP(%q) = %v", host, got)
		}
	}
	if !New(Options{SkipTLSVerify: true}).allowHTTP("10.0.0.1:5000") {
		t.Error("SkipTLSVerify must allow plain HTTP")
	}
}

func TestRegistryBlobResumesAndRetryAfter(t *testing.T) {
	reg := registrytest.Start(t)
	p := imagetest.MustPush(t, reg.Host()+"/r/a:1", fakeimage.Spec{Seed: 5, Layers: 1, LayerSize: 256 << 10})
	m, err := New(Options{Retry: mirrortest.FastRetry}).Manifest(context.Background(), reg.Host()+"/r/a", p.Digest.String())
	if err != nil {
		t.Fatal(err)
	}
	refs, err := oci.Parse(m)
	if err != nil {
		t.Fatal(err)
	}
	layer := refs.Blobs[1]
	proxy := registrytest.NewFaultProxy(t, reg.Host(), registrytest.FaultPlan{
		Sequence:   []registrytest.Fault{registrytest.CutMidBody, registrytest.TruncateBody, registrytest.TooManyRequests},
		RetryAfter: "1",
	})
	r := New(Options{Retry: mirrortest.FastRetry})
	start := time.Now()
	rc, err := r.Blob(context.Background(), proxy.Host()+"/r/a", layer)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, oci.NewVerifier(rc, layer))
	rc.Close()
	if err != nil || n != layer.Size {
		t.Fatalf("read %d bytes, err %v", n, err)
	}
	if c := reg.Counts(); c.ByPath["GET blob"] < 3 {
		t.Fatalf("expected resumed GETs, got %v (faults %v)", c.ByPath, proxy.Applied())
	}
	if time.Since(start) < time.Second {
		t.Fatal("Retry-After: 1 was not honoured")
	}
}

func TestRegistryPutBlobVerifies(t *testing.T) {
	reg := registrytest.Start(t)
	content := bytes.Repeat([]byte("airlock"), 4000)
	good := endpoint.Descriptor{Digest: digest.FromBytes(content), Size: int64(len(content))}
	ctx := context.Background()
	for _, mono := range []int64{1 << 20, 512} {
		r := New(Options{Retry: mirrortest.FastRetry, MonolithicMax: mono})
		repo := reg.Host() + "/put/test"
		corrupt := bytes.Clone(content)
		corrupt[100] ^= 1
		tests := []struct {
			name string
			data []byte
		}{
			{"flipped byte", corrupt},
			{"short", content[:len(content)-1]},
			{"long", append(bytes.Clone(content), 'x')},
		}
		for _, tc := range tests {
			reg.Reset()
			err := r.PutBlob(ctx, repo, good, bytes.NewReader(tc.data))
			if !errors.Is(err, oci.ErrDigestMismatch) {
				t.Fatalf("mono %d %s: err %v, want ErrDigestMismatch", mono, tc.name, err)
			}
			if c := reg.Counts(); c.BlobsCommitted != 0 {
				t.Fatalf("mono %d %s: committed %d", mono, tc.name, c.BlobsCommitted)
			}
		}
		if ok, _ := r.BlobExists(ctx, repo, good); ok {
			t.Fatal("blob exists after failed uploads")
		}
		if err := r.PutBlob(ctx, repo, good, bytes.NewReader(content)); err != nil {
			t.Fatal(err)
		}
		if ok, err := r.BlobExists(ctx, repo, good); !ok || err != nil {
			t.Fatalf("blob missing after upload: %v", err)
		}
		reg2 := reg.Host() + "/put/other"
		if ok, err := r.MountBlob(ctx, reg2, repo, good); !ok || err != nil {
			t.Fatalf("mount: %v %v", ok, err)
		}
		missing := endpoint.Descriptor{Digest: digest.FromString("nope"), Size: 4}
		if ok, err := r.MountBlob(ctx, reg2, repo, missing); ok || err != nil {
			t.Fatalf("mount of a missing blob: %v %v", ok, err)
		}
		// Clean up so that the next round uploads again.
		req, _ := http.NewRequest(http.MethodDelete, reg.URL()+"/v2/put/test/blobs/"+good.Digest.String(), nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
}

func TestSplitImageRef(t *testing.T) {
	d := digest.FromString("x")
	tests := []struct{ in, repo, ref string }{
		{"quay.io/ns/app:1.0", "quay.io/ns/app", "1.0"},
		{"127.0.0.1:5000/ns/app", "127.0.0.1:5000/ns/app", "latest"},
		{"127.0.0.1:5000/ns/app:v1@" + d.String(), "127.0.0.1:5000/ns/app", d.String()},
		{"quay.io/app@" + d.String(), "quay.io/app", d.String()},
	}
	for _, tc := range tests {
		repo, ref, err := splitImageRef(tc.in)
		if err != nil || repo != tc.repo || ref != tc.ref {
			t.Errorf("splitImageRef(%q) = %q, %q, %v", tc.in, repo, ref, err)
		}
	}
	if _, _, err := splitImageRef("quay.io/app@sha256:zz"); err == nil {
		t.Error("bad digest accepted")
	}
}
