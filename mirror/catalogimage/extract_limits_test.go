package catalogimage

import (
	"archive/tar"
	"bytes"
	"compress/flate"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// diskBytes is the total size of the regular files under dir.
func diskBytes(t testing.TB, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func nested(depth int) string {
	return "configs" + strings.Repeat("/d", depth)
}

func TestExtractLimits(t *testing.T) {
	body := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name    string
		limits  ExtractLimits
		layers  [][]tarEntry
		wantMsg string // empty: extraction succeeds
		maxDisk int64  // bytes the folder may hold afterwards
	}{
		{"file at the limit", ExtractLimits{MaxFileBytes: 100}, [][]tarEntry{{{name: "configs/a.json", body: body(100)}}}, "", 100},
		{"file over the limit", ExtractLimits{MaxFileBytes: 100}, [][]tarEntry{{{name: "configs/a.json", body: body(50)}, {name: "configs/big.json", body: body(101)}}},
			"file configs/big.json holds 101 B, more than the 100 B allowed for one file", 50},
		{"total at the limit", ExtractLimits{MaxBytes: 100}, [][]tarEntry{{{name: "configs/a.json", body: body(60)}, {name: "configs/b.json", body: body(40)}}}, "", 100},
		{"total over the limit", ExtractLimits{MaxBytes: 100}, [][]tarEntry{{{name: "configs/a.json", body: body(60)}, {name: "configs/b.json", body: body(41)}}},
			"file configs/b.json (41 B) would bring the catalog to 101 B, more than the 100 B allowed", 60},
		{"total across layers", ExtractLimits{MaxBytes: 100}, [][]tarEntry{{{name: "configs/a.json", body: body(60)}}, {{name: "configs/b.json", body: body(60)}}},
			"would bring the catalog to 120 B", 60},
		{"hidden files do not count", ExtractLimits{MaxBytes: 100}, [][]tarEntry{{{name: "configs/a.json", body: body(60)}}, {{name: "configs/a.json", body: body(60)}, {name: "other/b", body: body(200)}}}, "", 60},
		{"depth at the limit", ExtractLimits{MaxDepth: 3}, [][]tarEntry{{{name: nested(2) + "/a.json", body: "{}"}}}, "", 2},
		{"depth over the limit", ExtractLimits{MaxDepth: 3}, [][]tarEntry{{{name: "configs/a.json", body: "{}"}, {name: nested(4) + "/", typ: tar.TypeDir}}},
			"entry configs/d/d/d/d/ is 4 levels below /configs, more than the 3 allowed", 2},
		{"depth by default", ExtractLimits{}, [][]tarEntry{{{name: nested(DefaultMaxExtractDepth) + "/a.json", body: "{}"}}},
			fmt.Sprintf("is %d levels below /configs, more than the %d allowed", DefaultMaxExtractDepth+1, DefaultMaxExtractDepth), 0},
		{"entries at the limit", ExtractLimits{MaxEntries: 3}, [][]tarEntry{{{name: "configs/d/a.json", body: "{}"}, {name: "configs/d/b.json", body: "{}"}}}, "", 4},
		{"entries over the limit", ExtractLimits{MaxEntries: 3}, [][]tarEntry{{{name: "configs/a", typ: tar.TypeSymlink, link: "b"}, {name: "configs/b", body: "{}"}, {name: "configs/c/", typ: tar.TypeDir}, {name: "configs/d", body: "{}"}}},
			"entry configs/d would be entry 4 of the catalog, more than the 3 allowed", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "root")
			if err := os.Mkdir(dst, 0o755); err != nil {
				t.Fatal(err)
			}
			var ls []v1.Layer
			for _, l := range tc.layers {
				ls = append(ls, tarLayer(t, types.OCIUncompressedLayer, l...))
			}
			err := extractLayers(context.Background(), ls, "/configs", dst, tc.limits, discardLogger(), nil)
			if tc.wantMsg == "" && err != nil {
				t.Fatalf("extraction failed: %v", err)
			}
			if tc.wantMsg != "" && (!errors.Is(err, ErrExtractLimit) || !strings.Contains(err.Error(), tc.wantMsg)) {
				t.Fatalf("error = %v, want ErrExtractLimit containing %q", err, tc.wantMsg)
			}
			if n := diskBytes(t, dst); n > tc.maxDisk {
				t.Fatalf("%d bytes written, want at most %d", n, tc.maxDisk)
			}
		})
	}
}

// bombLayer is a gzip layer of about 1 MB whose tar holds configs/a.json and
// configs/bomb.json, a file of 1 GiB of zeros. The deflate stream is made of
// independent flushed segments (one per MiB of zeros, all the same), so it is
// built in milliseconds; its digests are those of the real bytes.
type bombLayer struct {
	gz     []byte
	diffID v1.Hash
	read   *atomic.Int64 // compressed bytes handed out
}

var bombOnce = sync.OnceValues(func() ([]byte, v1.Hash) {
	const fileSize = 1 << 30
	var head bytes.Buffer
	tw := tar.NewWriter(&head)
	small := []byte(`{"schema":"olm.package","name":"a"}`)
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	must(tw.WriteHeader(&tar.Header{Name: "configs/a.json", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(small))}))
	_, err := tw.Write(small)
	must(err)
	must(tw.Flush())
	// The bomb's header, written as is (its body follows as deflate segments).
	must(tar.NewWriter(&head).WriteHeader(&tar.Header{Name: "configs/bomb.json", Typeflag: tar.TypeReg, Mode: 0o644, Size: fileSize}))
	// What follows the header: the file's zeros, then the two zero blocks that end a tar.
	zeros := make([]byte, 1<<20)
	segment := func(b []byte) []byte {
		var out bytes.Buffer
		fw, _ := flate.NewWriter(&out, flate.BestCompression)
		_, err := fw.Write(b)
		must(err)
		must(fw.Flush())
		return out.Bytes()
	}
	var gz bytes.Buffer
	gz.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	gz.Write(segment(head.Bytes()))
	mib := segment(zeros)
	for range fileSize >> 20 {
		gz.Write(mib)
	}
	gz.Write(segment(zeros[:1024]))
	var end bytes.Buffer
	fw, _ := flate.NewWriter(&end, flate.BestCompression)
	must(fw.Close())
	gz.Write(end.Bytes())

	crc := crc32.NewIEEE()
	sum := sha256.New()
	w := io.MultiWriter(crc, sum)
	w.Write(head.Bytes())
	for range fileSize >> 20 {
		w.Write(zeros)
	}
	w.Write(zeros[:1024])
	size := uint32(head.Len() + fileSize + 1024)
	gz.Write(binary.LittleEndian.AppendUint32(nil, crc.Sum32()))
	gz.Write(binary.LittleEndian.AppendUint32(nil, size))
	return gz.Bytes(), v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", sum.Sum(nil))}
})

func (l *bombLayer) Digest() (v1.Hash, error) {
	s := sha256.Sum256(l.gz)
	return v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", s)}, nil
}
func (l *bombLayer) DiffID() (v1.Hash, error) { return l.diffID, nil }
func (l *bombLayer) Compressed() (io.ReadCloser, error) {
	return io.NopCloser(&countingReader{r: bytes.NewReader(l.gz), n: l.read}), nil
}
func (l *bombLayer) Size() (int64, error)                { return int64(len(l.gz)), nil }
func (l *bombLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// A 1 MB gzip layer expanding to a 1 GiB file is refused by the default limits
// as soon as the file's tar header is read: the error names the image and the
// limit, and nothing of the file is written.
func TestExtractRefusesGzipBomb(t *testing.T) {
	gz, diffID := bombOnce()
	read := &atomic.Int64{}
	layer, err := partial.CompressedToLayer(&bombLayer{gz: gz, diffID: diffID, read: read})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := img.ConfigFile()
	cfg = cfg.DeepCopy()
	cfg.Config.Labels = map[string]string{ConfigsLabel: "/configs"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "bomb")
	mirrortest.WriteLayout(t, dir, func(p layout.Path) {
		if err := p.AppendImage(img); err != nil {
			t.Fatal(err)
		}
	})
	read.Store(0)
	work := t.TempDir()
	start := time.Now()
	_, err = Fetch(context.Background(), "oci://"+dir, work, FetchOptions{Logger: discardLogger()})
	elapsed := time.Since(start)
	if !errors.Is(err, ErrExtractLimit) {
		t.Fatalf("error = %v, want ErrExtractLimit", err)
	}
	for _, want := range []string{"oci://" + dir, "configs/bomb.json holds 1.0 GiB", "512.0 MiB allowed for one file"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if n := diskBytes(t, work); n > 1<<20 {
		t.Errorf("the work folder holds %d bytes after the refusal", n)
	}

	// The same layer read directly: how much of it is read before the refusal.
	read.Store(0)
	dst := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := extractLayers(context.Background(), []v1.Layer{layer}, "/configs", dst, ExtractLimits{}, discardLogger(), nil); !errors.Is(err, ErrExtractLimit) {
		t.Fatalf("error = %v, want ErrExtractLimit", err)
	}
	// The compressed read-ahead may be that far ahead of the inflating.
	if n := read.Load(); n > readAheadBlocks*readAheadBlock+64<<10 {
		t.Errorf("%d compressed bytes read before the refusal", n)
	}
	if n := diskBytes(t, dst); n > 1<<10 {
		t.Errorf("%d bytes written before the refusal", n)
	}
	t.Logf("%d-byte gzip layer (1 GiB uncompressed) refused in %v; read directly: after %d compressed bytes, %d bytes written", len(gz), elapsed, read.Load(), diskBytes(t, dst))
}

// Extraction does constant work per level of nesting: an open handle on the
// folder last written to, and a tree of what is on disk instead of a lookup of
// every parent. (3,000 levels used to take minutes; see BenchmarkExtractDepth.)
func TestExtractDeepNesting(t *testing.T) {
	const depth = 300
	var es []tarEntry
	p := "configs"
	for i := range depth {
		p += "/d"
		es = append(es, tarEntry{name: p + "/", typ: tar.TypeDir})
		if i%100 == 0 {
			es = append(es, tarEntry{name: p + "/f.json", body: "{}"})
		}
	}
	es = append(es, tarEntry{name: p + "/x.json", body: "{}"})
	dst := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ls := []v1.Layer{tarLayer(t, types.OCIUncompressedLayer, es...)}
	if err := extractLayers(context.Background(), ls, "/configs", dst, ExtractLimits{MaxDepth: depth + 1}, discardLogger(), nil); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if b, err := root.ReadFile(strings.TrimPrefix(p, "configs/") + "/x.json"); err != nil || string(b) != "{}" {
		t.Fatalf("deepest file = %q, %v", b, err)
	}
}

func BenchmarkExtractDepth(b *testing.B) {
	for _, depth := range []int{100, 1000, 3000} {
		b.Run(fmt.Sprint(depth), func(b *testing.B) {
			var es []tarEntry
			p := "configs"
			for range depth {
				p += "/d"
				es = append(es, tarEntry{name: p + "/", typ: tar.TypeDir}, tarEntry{name: p + "/f.json", body: "{}"})
			}
			ls := []v1.Layer{tarLayer(b, types.OCIUncompressedLayer, es...)}
			for b.Loop() {
				dst := filepath.Join(b.TempDir(), "root")
				if err := os.Mkdir(dst, 0o755); err != nil {
					b.Fatal(err)
				}
				if err := extractLayers(context.Background(), ls, "/configs", dst, ExtractLimits{MaxDepth: depth + 1}, discardLogger(), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Special files (FIFOs, devices) are never created, hide what lower layers
// hold at their path, and are replaced by a later entry of their own layer.
func TestExtractSpecialFiles(t *testing.T) {
	tests := []struct {
		name   string
		layers [][]tarEntry
		want   map[string]string // file → content; absent files must not exist
	}{
		{"fifo skipped", [][]tarEntry{{{name: "configs/a.json", body: "{}"}, {name: "configs/p", typ: tar.TypeFifo}}},
			map[string]string{"a.json": "{}", "p": ""}},
		{"fifo hides a lower file", [][]tarEntry{{{name: "configs/a.json", body: "{}"}, {name: "configs/p.json", body: "lower"}}, {{name: "configs/p.json", typ: tar.TypeFifo}}},
			map[string]string{"a.json": "{}", "p.json": ""}},
		{"fifo replaces an earlier entry", [][]tarEntry{{{name: "configs/a.json", body: "{}"}, {name: "configs/p.json", body: "first"}, {name: "configs/p.json", typ: tar.TypeFifo}}},
			map[string]string{"a.json": "{}", "p.json": ""}},
		{"file replaces an earlier fifo", [][]tarEntry{{{name: "configs/p.json", typ: tar.TypeFifo}, {name: "configs/p.json", body: "{}"}}},
			map[string]string{"p.json": "{}"}},
		{"folder replaces an earlier file", [][]tarEntry{{{name: "configs/d", body: "x"}, {name: "configs/d/", typ: tar.TypeDir}, {name: "configs/d/a.json", body: "{}"}}},
			map[string]string{"d/a.json": "{}"}},
		{"hard link to a fifo", [][]tarEntry{{{name: "configs/a.json", body: "{}"}, {name: "configs/p", typ: tar.TypeFifo}, {name: "configs/h", typ: tar.TypeLink, link: "configs/p"}}},
			map[string]string{"a.json": "{}", "h": ""}},
	}
	for _, typ := range []byte{tar.TypeChar, tar.TypeBlock} {
		// A device is refused, naming the entry; outside the catalog folder
		// it is none of the catalog's business.
		_, err := extractFrom(t, "/configs", [][]tarEntry{{{name: "configs/a.json", body: "{}"}, {name: "configs/dev/null0", typ: typ}}}...)
		if !errors.Is(err, ErrUnsafeLayer) || !strings.Contains(err.Error(), "configs/dev/null0 is a") || !strings.Contains(err.Error(), "device") {
			t.Errorf("device %c in the catalog folder: %v", typ, err)
		}
		if _, err := extractFrom(t, "/configs", [][]tarEntry{{{name: "configs/a.json", body: "{}"}, {name: "dev/null0", typ: typ}}}...); err != nil {
			t.Errorf("device %c outside the catalog folder: %v", typ, err)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst, err := extractFrom(t, "/configs", tc.layers...)
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range tc.want {
				fi, err := os.Lstat(filepath.Join(dst, name))
				if want == "" {
					if err == nil {
						t.Errorf("%s exists (%v)", name, fi.Mode())
					}
					continue
				}
				if err != nil || !fi.Mode().IsRegular() {
					t.Fatalf("%s: %v, %v", name, fi, err)
				}
				if b, _ := os.ReadFile(filepath.Join(dst, name)); string(b) != want {
					t.Errorf("%s = %q, want %q", name, b, want)
				}
			}
		})
	}
}
