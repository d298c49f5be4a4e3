package layout

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/airlock-mirror/airlock/mirror/oci"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
)

// BinaryImageOptions describe the image BuildBinaryImage makes.
type BinaryImageOptions struct {
	// Binary is the program (a static Linux executable), Entrypoint its path in
	// the image ("/airlock").
	Binary, Entrypoint string
	// Tag names the image in the layout; Labels go into its configuration.
	Tag    string
	Labels map[string]string
	// Arch is the binary's architecture (default runtime.GOARCH).
	Arch string
}

// BinaryImage is an image BuildBinaryImage wrote into an OCI layout.
type BinaryImage struct {
	Digest    digest.Digest
	MediaType types.MediaType
	LayoutDir string
	// Size is the compressed size of its one layer.
	Size int64
}

// ErrNotStatic is returned (wrapped) for a binary that cannot run alone in an
// image: not a Linux executable, or linked against shared libraries.
var ErrNotStatic = errors.New("not a static Linux executable")

// BuildBinaryImage builds a minimal image holding one program and nothing else
// (no shell, no libraries): one layer with the program, /etc/passwd naming the
// unprivileged user 65532 it runs as, and an empty /tmp; no container engine
// is involved. The layer and configuration are deterministic (fixed times,
// owner 0:0), so the same binary gives the same digest. It is written to the
// OCI layout dir, from where NewSource serves it to the copy engine.
func BuildBinaryImage(dir string, o BinaryImageOptions) (*BinaryImage, error) {
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, err
	}
	if err := checkStatic(bin, o.Binary); err != nil {
		return nil, err
	}
	if o.Entrypoint == "" {
		return nil, errors.New("no entrypoint path for the binary")
	}
	if o.Arch == "" {
		o.Arch = runtime.GOARCH
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := []struct {
		name string
		typ  byte
		mode int64
		data []byte
	}{
		{"etc/", tar.TypeDir, 0o755, nil},
		{"etc/passwd", tar.TypeReg, 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\nairlock:x:65532:65532:airlock:/work:/sbin/nologin\n")},
		{"etc/group", tar.TypeReg, 0o644, []byte("root:x:0:\nairlock:x:65532:\n")},
		{"tmp/", tar.TypeDir, 0o1777, nil},
		{"work/", tar.TypeDir, 0o777, nil},
		{o.Entrypoint[1:], tar.TypeReg, 0o755, bin},
	}
	for _, f := range files {
		h := &tar.Header{Name: f.name, Typeflag: f.typ, Mode: f.mode, Size: int64(len(f.data)), Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	gz, err := gzipDeterministic(buf.Bytes())
	if err != nil {
		return nil, err
	}
	layer := static.NewLayer(gz, types.OCILayer)
	diffID, err := v1.NewHash(digest.FromBytes(buf.Bytes()).String())
	if err != nil {
		return nil, err
	}
	img, err := mutate.Append(mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1),
		mutate.Addendum{Layer: layer, History: v1.History{CreatedBy: "airlock kube image", Comment: "the airlock binary"}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", o.Arch
	cf.RootFS.DiffIDs = []v1.Hash{diffID}
	cf.Config.Entrypoint = []string{o.Entrypoint}
	cf.Config.User = "65532:65532"
	cf.Config.WorkingDir = "/work"
	cf.Config.Env = []string{"HOME=/work", "TMPDIR=/tmp"}
	cf.Config.Labels = o.Labels
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, err
	}
	if err := lp.AppendImage(img, layout.WithAnnotations(map[string]string{oci.AnnotationRefName: o.Tag})); err != nil {
		return nil, err
	}
	d, err := img.Digest()
	if err != nil {
		return nil, err
	}
	return &BinaryImage{Digest: digest.Digest(d.String()), MediaType: types.OCIManifestSchema1, LayoutDir: dir, Size: int64(len(gz))}, nil
}

// checkStatic refuses what would not run in an image without libraries.
func checkStatic(bin []byte, path string) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("%s is %w (it is not an ELF file): build airlock for Linux (GOOS=linux CGO_ENABLED=0) and give it with --binary", path, ErrNotStatic)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is %w: it is linked against shared libraries, which the image does not have; build it with CGO_ENABLED=0 and give it with --binary", path, ErrNotStatic)
		}
	}
	return nil
}

// gzipDeterministic compresses b with the layers' one gzip writer.
func gzipDeterministic(b []byte) ([]byte, error) {
	var out bytes.Buffer
	zw, err := NewLayerGzip(&out, 2*runtime.GOMAXPROCS(0))
	if err != nil {
		return nil, err
	}
	_, err = zw.Write(b)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
