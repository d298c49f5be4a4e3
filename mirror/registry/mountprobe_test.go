package registry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// TestMountProbe: the first blob a client commits on a host is followed by one
// mount request of that blob into its own repository. A registry that honours
// it (201) is trusted from then on: a new blob costs the POST and the PUT, no
// HEAD. One that ignores mounts gets its session cancelled, is not probed
// again, and every new blob is still looked up with a HEAD first, so a blob it
// holds is never sent again.
func TestMountProbe(t *testing.T) {
	ctx := context.Background()
	blob := func(s string) (endpoint.Descriptor, []byte) {
		b := bytes.Repeat([]byte(s), 100)
		return endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}, b
	}
	cases := []struct {
		name    string
		honours bool
		// after the probe, for each new blob
		wantHEAD int64
	}{
		{"honours mounts", true, 0},
		{"ignores mounts", false, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := registrytest.Start(t)
			host := reg.Host()
			if !tc.honours {
				host, _ = noMountProxy(t, reg)
			}
			r := New(Options{Retry: mirrortest.FastRetry})
			repo := host + "/probe/a"
			first, content := blob("first")
			up, err := r.StartBlob(ctx, repo, first)
			if err != nil || up == nil {
				t.Fatalf("StartBlob: %v, %v", up, err)
			}
			if c := reg.Counts(); c.BlobHEAD != 1 {
				t.Fatalf("before the probe a new blob is looked up with a HEAD: %+v", c)
			}
			reg.Reset()
			if err := up.Write(ctx, bytes.NewReader(content)); err != nil {
				t.Fatal(err)
			}
			c := reg.Counts()
			// The commit, then the probe: one more upload POST.
			if c.BlobsCommitted != 1 || c.UploadPOST+c.MountPOST != 1 {
				t.Fatalf("commit and probe: %+v", c)
			}
			if tc.honours && c.Mounted != 1 {
				t.Fatalf("the probe was not answered 201: %+v", c)
			}
			if !tc.honours && (c.Sessions != 1 || c.ByPath["DELETE upload"] != 1) {
				t.Fatalf("the probe's session was not cancelled: %+v (%v)", c, c.ByPath)
			}
			for _, s := range []string{"second", "third"} {
				reg.Reset()
				d, content := blob(s)
				up, err := r.StartBlob(ctx, repo, d)
				if err != nil || up == nil {
					t.Fatalf("StartBlob %s: %v, %v", s, up, err)
				}
				if err := up.Write(ctx, bytes.NewReader(content)); err != nil {
					t.Fatal(err)
				}
				c := reg.Counts()
				if c.BlobHEAD != tc.wantHEAD || c.UploadPOST+c.MountPOST != 1 || c.BlobsCommitted != 1 {
					t.Fatalf("%s blob: %+v, want %d HEAD, 1 POST (no probe again), 1 commit", s, c, tc.wantHEAD)
				}
			}
			// A blob the repository holds is not sent again either way.
			reg.Reset()
			if up, err := r.StartBlob(ctx, repo, first); err != nil || up != nil {
				t.Fatalf("StartBlob of a held blob: %v, %v", up, err)
			}
			if c := reg.Counts(); c.BytesUploaded != 0 || c.UploadPUT != 0 {
				t.Fatalf("a held blob was sent: %+v", c)
			}
		})
	}
}

// readBlob reads exactly the declared size, checks the end and the digest, and
// names what went wrong.
func TestReadBlob(t *testing.T) {
	content := []byte(strings.Repeat("blob-content", 1000))
	d := oci.Descriptor{Digest: digest.FromBytes(content), Size: int64(len(content))}
	cases := []struct {
		name    string
		body    []byte
		desc    oci.Descriptor
		wantErr bool
	}{
		{"exact", content, d, false},
		{"empty", nil, oci.Descriptor{Digest: digest.FromBytes(nil), Size: 0}, false},
		{"short", content[:len(content)-1], d, true},
		{"long", append(append([]byte{}, content...), 'x'), d, true},
		{"altered", append([]byte{'X'}, content[1:]...), d, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			buf := getBuf(int(tc.desc.Size)+1, 4<<20+1)
			// One byte at a time: reads that end anywhere.
			got, err := readBlob(oci.NewVerifier(&oneByte{bytes.NewReader(tc.body)}, tc.desc), buf)
			if tc.wantErr {
				if !errors.Is(err, oci.ErrDigestMismatch) {
					t.Fatalf("err %v, want a digest mismatch", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tc.body) {
				t.Fatalf("got %d bytes, %v", len(got), err)
			}
			putBuf(buf)
		})
	}
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}
