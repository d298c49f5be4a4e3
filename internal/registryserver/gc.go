package registryserver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/distribution/distribution/v3/registry/storage"
	"github.com/distribution/distribution/v3/registry/storage/driver"
	"github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

// blobsRoot is where Distribution's filesystem driver keeps blob data (one
// folder per digest: blobs/sha256/ab/abcdef.../data).
const blobsRoot = "/docker/registry/v2/blobs/"

// GCResult is what a garbage collection found (and, unless DryRun, removed).
type GCResult struct {
	DryRun bool `json:"dryRun"`
	// BlobsBefore and BytesBefore are the blob store before the collection.
	BlobsBefore int   `json:"blobsBefore"`
	BytesBefore int64 `json:"bytesBefore"`
	// BlobsDeleted and BytesFreed are the blobs no manifest of any repository
	// references (removed, or that would be with DryRun).
	BlobsDeleted int   `json:"blobsDeleted"`
	BytesFreed   int64 `json:"bytesFreed"`
	// LayerLinks are the repository layer links removed with them.
	LayerLinks int `json:"layerLinks"`
}

// GarbageCollect runs Distribution's mark and sweep (the code of "registry
// garbage-collect") over the filesystem storage in root: every blob that no
// manifest of any repository references is removed. Manifests deleted through
// the API (airlock delete) are what makes blobs unreferenced. With dryRun nothing
// is removed and the result says what would be. No registry may write to root
// meanwhile: stop `airlock registry serve` first (a push during the sweep can
// lose blobs it has just uploaded).
func GarbageCollect(ctx context.Context, root string, dryRun bool) (*GCResult, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("registry storage %s: %w", root, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("registry storage %s is not a folder: give the --root of airlock registry serve", root)
	}
	if _, err := os.Stat(filepath.Join(root, "docker", "registry", "v2")); err != nil {
		return nil, fmt.Errorf("%s holds no registry storage (no docker/registry/v2 inside): give the --root of airlock registry serve", root)
	}
	if addr, serving := servedAt(root); serving {
		return nil, fmt.Errorf("a registry is serving %s on %s: stop it first (a push during the sweep can lose the blobs it has just uploaded); if nothing listens there, remove %s", root, addr, filepath.Join(root, ServingFile))
	}
	quietDistribution(nil)
	res := &GCResult{DryRun: dryRun}
	res.BlobsBefore, res.BytesBefore, err = blobUsage(root)
	if err != nil {
		return nil, err
	}
	fsd, err := filesystem.FromParameters(map[string]any{"rootdirectory": root})
	if err != nil {
		return nil, fmt.Errorf("open registry storage %s: %w", root, err)
	}
	rec := &recordingDriver{StorageDriver: fsd, root: root, dryRun: dryRun, res: res}
	ns, err := storage.NewRegistry(ctx, rec, storage.EnableDelete)
	if err != nil {
		return nil, fmt.Errorf("open registry storage %s: %w", root, err)
	}
	// The sweep's deletes go through rec: it measures each blob before it goes,
	// and with dryRun only measures. (Distribution's own dry run prints to
	// stdout and does not say how much it would free.)
	if err := storage.MarkAndSweep(ctx, rec, ns, storage.GCOpts{Quiet: true}); err != nil {
		return res, fmt.Errorf("garbage collection of %s: %w", root, err)
	}
	return res, nil
}

// ServingFile, in the storage folder of a running Serve, holds the address it
// listens on.
const ServingFile = "airlock-serve.addr"

func markServing(root, addr string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("registry storage %s: %w", root, err)
	}
	return os.WriteFile(filepath.Join(root, ServingFile), []byte(addr+"\n"), 0o644)
}

// servedAt reports whether a registry answers on the address a Serve of root
// recorded (a file left by a registry that died is ignored).
func servedAt(root string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(root, ServingFile))
	if err != nil {
		return "", false
	}
	addr := strings.TrimSpace(string(b))
	// A whole HTTP exchange (an HTTPS registry answers a plain request with an
	// error, which is an answer): a bare connection would hold up the
	// registry's graceful shutdown.
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + addr + "/v2/")
	if err != nil {
		return addr, false
	}
	resp.Body.Close()
	return addr, true
}

// recordingDriver measures what the sweep deletes.
type recordingDriver struct {
	driver.StorageDriver
	root   string
	dryRun bool

	mu  sync.Mutex
	res *GCResult
}

func (d *recordingDriver) Delete(ctx context.Context, p string) error {
	var size int64
	isBlob := strings.HasPrefix(p, blobsRoot)
	if isBlob {
		if fi, err := d.StorageDriver.Stat(ctx, path.Join(p, "data")); err == nil {
			size = fi.Size()
		}
	}
	d.mu.Lock()
	switch {
	case isBlob:
		d.res.BlobsDeleted++
		d.res.BytesFreed += size
	case strings.Contains(p, "/_layers/"):
		d.res.LayerLinks++
	}
	d.mu.Unlock()
	if d.dryRun {
		return nil
	}
	return d.StorageDriver.Delete(ctx, p)
}

// blobUsage counts the blobs under root and their bytes.
func blobUsage(root string) (int, int64, error) {
	dir := filepath.Join(root, filepath.FromSlash(blobsRoot))
	n, total := 0, int64(0)
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.Type().IsRegular() && e.Name() == "data" {
			fi, err := e.Info()
			if err != nil {
				return err
			}
			n++
			total += fi.Size()
		}
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("measure registry storage %s: %w", root, err)
	}
	return n, total, nil
}
