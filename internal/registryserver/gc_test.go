package registryserver

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
)

// Deleting one of two images through the API, then collecting, frees exactly
// that image's blobs and manifest; the other image is still served.
func TestGarbageCollect(t *testing.T) {
	root := t.TempDir()
	s, err := NewServer(Config{RootDir: root})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	keep := imagetest.MustPush(t, host+"/ns/keep:v1", fakeimage.Spec{Seed: 1, Layers: 2, LayerSize: 4096})
	gone := imagetest.MustPush(t, host+"/ns/gone:v1", fakeimage.Spec{Seed: 2, Layers: 2, LayerSize: 4096})
	raw, code := get(t, srv.URL+"/v2/ns/gone/manifests/"+gone.Digest.String(), gone.MediaType)
	if code != http.StatusOK {
		t.Fatalf("get manifest: %d", code)
	}
	ctx := context.Background()
	before, err := GarbageCollect(ctx, root, true)
	if err != nil || before.BlobsDeleted != 0 || before.BlobsBefore == 0 {
		t.Fatalf("nothing deleted yet: %+v, %v", before, err)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/v2/ns/gone/manifests/"+gone.Digest.String(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("delete: %v %v", resp, err)
	}
	resp.Body.Close()

	want := gone.BlobBytes + int64(len(raw))
	dry, err := GarbageCollect(ctx, root, true)
	if err != nil || dry.BytesFreed != want || dry.BlobsDeleted != len(gone.Blobs)+1 {
		t.Fatalf("dry run: %+v, %v; want %d bytes in %d blobs", dry, err, want, len(gone.Blobs)+1)
	}
	res, err := GarbageCollect(ctx, root, false)
	if err != nil || res.BytesFreed != want || res.BlobsDeleted != dry.BlobsDeleted {
		t.Fatalf("gc: %+v, %v", res, err)
	}
	after, err := GarbageCollect(ctx, root, true)
	if err != nil || after.BlobsDeleted != 0 || after.BytesBefore != res.BytesBefore-res.BytesFreed {
		t.Fatalf("after gc: %+v, %v", after, err)
	}
	for _, d := range keep.Blobs {
		if _, code := get(t, srv.URL+"/v2/ns/keep/blobs/"+d.String(), ""); code != http.StatusOK {
			t.Errorf("kept blob %s: %d", d, code)
		}
	}
	if _, code := get(t, srv.URL+"/v2/ns/keep/manifests/v1", keep.MediaType); code != http.StatusOK {
		t.Errorf("kept image: %d", code)
	}
}

func get(t *testing.T, url, accept string) ([]byte, int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b, resp.StatusCode
}

func TestGarbageCollectBadRoot(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ root, want string }{
		{filepath.Join(dir, "missing"), "no such file"},
		{file, "is not a folder"},
		{dir, "holds no registry storage"},
	} {
		if _, err := GarbageCollect(context.Background(), tc.root, true); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.root, err, tc.want)
		}
	}
}

// A storage a registry is serving is not swept; once it stopped, it is.
func TestGarbageCollectRefusesServedStorage(t *testing.T) {
	root := t.TempDir()
	s, err := NewServer(Config{RootDir: root, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	s.cfg.Ready = func(url string) { ready <- url }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	url := <-ready
	imagetest.MustPush(t, strings.TrimPrefix(url, "http://")+"/ns/a:v1", fakeimage.Spec{Seed: 1, Layers: 1})
	if _, err := GarbageCollect(context.Background(), root, true); err == nil || !strings.Contains(err.Error(), "stop it first") {
		t.Fatalf("gc of a served storage: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := GarbageCollect(context.Background(), root, true); err != nil {
		t.Fatalf("gc after the registry stopped: %v", err)
	}
	// A file left by a registry that died does not block.
	if err := markServing(root, "127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	if _, err := GarbageCollect(context.Background(), root, true); err != nil {
		t.Fatalf("gc with a stale marker: %v", err)
	}
}

// A client holding a connection it never sent a request on does not turn a
// stop into an error (net/http only counts such a connection idle after 5 s,
// as long as the graceful shutdown waits).
func TestServeStopsWithAnUnusedConnection(t *testing.T) {
	s, err := NewServer(Config{RootDir: t.TempDir(), Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	s.cfg.Ready = func(url string) { ready <- url }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	url := <-ready
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	time.Sleep(100 * time.Millisecond) // let the server accept it
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("stop with an unused connection open: %v", err)
	}
}
