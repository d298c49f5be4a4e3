package conformance

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/operator-framework/operator-registry/cmd/opm/serve"
	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/operator-framework/operator-registry/pkg/cache"
	"github.com/operator-framework/operator-registry/pkg/server"
	"github.com/sirupsen/logrus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	health "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/airlock-mirror/airlock/fbc"
)

// indexLabel is the label opm and oc-mirror read to find a catalog image's configs.
const indexLabel = "operators.operatorframework.io.index.configs.v1"

// olmGRPCPort is the port OLM's catalog pod, its service and its readiness probe
// (grpc_health_probe -addr=:50051) use.
const olmGRPCPort = "50051"

// exportedCatalog is a rebuilt catalog image as a CatalogSource pod runs it.
type exportedCatalog struct {
	ref      string
	rootfs   string // the image's filesystem (linux/amd64)
	configs  string // the folder `opm serve` serves, inside rootfs
	cacheDir string // --cache-dir of the command, inside rootfs ("" when none)
	// model is airlock's own reading of the served folder.
	model *fbc.Catalog
}

// exportCatalog pulls the run's rebuilt catalog from the mirror, checks the config
// of every platform the way a CatalogSource pod uses it, and exports the linux/amd64
// filesystem.
func exportCatalog(t testing.TB, r *mirrorRun) *exportedCatalog {
	t.Helper()
	c := r.res.Catalogs[0]
	ref := c.DestRepo + ":" + c.Tag
	nref, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(nref)
	if err != nil {
		t.Fatalf("pull %s: %v", ref, err)
	}
	if desc.Digest.String() != c.Digest.String() {
		t.Errorf("%s is %s at the mirror, the run says %s", ref, desc.Digest, c.Digest)
	}
	var amd64 v1.Image
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(im.Manifests) < 2 {
			t.Errorf("%s: an index of %d images", ref, len(im.Manifests))
		}
		for _, m := range im.Manifests {
			img, err := idx.Image(m.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := podServeArgs(cf); err != nil {
				t.Errorf("%s (%s): %v", ref, m.Platform, err)
			}
			if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == "amd64" {
				amd64 = img
			}
		}
		if amd64 == nil {
			t.Fatalf("%s: no linux/amd64 image", ref)
		}
	} else {
		if amd64, err = desc.Image(); err != nil {
			t.Fatal(err)
		}
	}
	cf, err := amd64.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	ex := &exportedCatalog{ref: ref, rootfs: t.TempDir()}
	if err := untar(mutate.Extract(amd64), ex.rootfs); err != nil {
		t.Fatalf("export %s: %v", ref, err)
	}
	configs, cacheDir, err := podServeArgs(cf)
	if err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	if err := checkEntrypoint(ex.rootfs, cf); err != nil {
		t.Errorf("%s: %v", ref, err)
	}
	ex.configs = filepath.Join(ex.rootfs, filepath.FromSlash(configs))
	if st, err := os.Stat(ex.configs); err != nil || !st.IsDir() {
		t.Fatalf("%s: the served folder %s is not in the image: %v", ref, configs, err)
	}
	if cacheDir != "" {
		ex.cacheDir = filepath.Join(ex.rootfs, filepath.FromSlash(cacheDir))
	}
	if ex.model, err = fbc.LoadDir(context.Background(), ex.configs, fbc.LoadOptions{}); err != nil {
		t.Fatalf("%s: airlock cannot read the served folder: %v", ref, err)
	}
	return ex
}

// podServeArgs checks what a CatalogSource pod runs: OLM starts the image with its
// own entrypoint and command and probes port 50051. It returns the folder served and
// the --cache-dir. The arguments are parsed by opm's own serve command.
func podServeArgs(cf *v1.ConfigFile) (configs, cacheDir string, err error) {
	args := append(append([]string{}, cf.Config.Entrypoint...), cf.Config.Cmd...)
	if len(args) < 2 || path.Base(args[0]) != "opm" || args[1] != "serve" {
		return "", "", fmt.Errorf("entrypoint %q + command %q do not run `opm serve`", cf.Config.Entrypoint, cf.Config.Cmd)
	}
	cmd := serve.NewCmd()
	if err := cmd.ParseFlags(args[2:]); err != nil {
		return "", "", fmt.Errorf("opm serve refuses the arguments %q: %w", args[2:], err)
	}
	pos := cmd.Flags().Args()
	if err := cmd.ValidateArgs(pos); err != nil {
		return "", "", fmt.Errorf("opm serve refuses the arguments %q: %w", args[2:], err)
	}
	port, _ := cmd.Flags().GetString("port")
	if port != olmGRPCPort {
		return "", "", fmt.Errorf("opm serve would listen on port %s; OLM connects to and probes %s", port, olmGRPCPort)
	}
	if only, _ := cmd.Flags().GetBool("cache-only"); only {
		return "", "", errors.New("the command builds the cache and exits (--cache-only): the pod would never serve")
	}
	cacheDir, _ = cmd.Flags().GetString("cache-dir")
	configs = pos[0]
	if !path.IsAbs(configs) {
		wd := cf.Config.WorkingDir
		if wd == "" {
			wd = "/"
		}
		configs = path.Join(wd, configs)
	}
	if lbl := cf.Config.Labels[indexLabel]; path.Clean(lbl) != path.Clean(configs) {
		return "", "", fmt.Errorf("label %s=%q, but the command serves %s", indexLabel, lbl, configs)
	}
	return configs, cacheDir, nil
}

// checkEntrypoint checks that the program the pod starts is in the image.
func checkEntrypoint(rootfs string, cf *v1.ConfigFile) error {
	args := append(append([]string{}, cf.Config.Entrypoint...), cf.Config.Cmd...)
	bin := args[0]
	cands := []string{bin}
	if !strings.Contains(bin, "/") {
		cands = nil
		pathEnv := "/usr/local/bin:/usr/bin:/bin"
		for _, e := range cf.Config.Env {
			if v, ok := strings.CutPrefix(e, "PATH="); ok {
				pathEnv = v
			}
		}
		for _, d := range strings.Split(pathEnv, ":") {
			cands = append(cands, path.Join(d, bin))
		}
	}
	for _, c := range cands {
		if st, err := os.Stat(filepath.Join(rootfs, filepath.FromSlash(c))); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return nil
		}
	}
	return fmt.Errorf("the entrypoint %s is not an executable file of the image", bin)
}

// untar writes a flattened filesystem stream into dir.
func untar(rc io.ReadCloser, dir string) error {
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		clean := path.Clean("/" + h.Name)
		if clean == "/" {
			continue
		}
		dst := filepath.Join(dir, filepath.FromSlash(clean))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(dst, 0o755)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
				var f *os.File
				if f, err = os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode)&0o755|0o600); err == nil {
					_, err = io.Copy(f, tr)
					if cerr := f.Close(); err == nil {
						err = cerr
					}
				}
			}
		case tar.TypeSymlink, tar.TypeLink:
			// Absolute targets are taken inside dir, so that the entrypoint check
			// follows them in the image, never on the host.
			target := h.Linkname
			if path.IsAbs(target) || h.Typeflag == tar.TypeLink {
				target = filepath.Join(dir, filepath.FromSlash(path.Clean("/"+target)))
			}
			if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
				_ = os.Remove(dst)
				if h.Typeflag == tar.TypeLink {
					err = os.Link(target, dst)
				} else {
					err = os.Symlink(target, dst)
				}
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", h.Name, err)
		}
	}
}

// servedCatalog is a running operator-registry server and a client of it.
type servedCatalog struct {
	client api.RegistryClient
	health health.HealthClient
}

// serveCatalog starts operator-registry's gRPC server on the exported folder as
// `opm serve` does: its cache (built in a temporary folder, or checked for integrity
// when the command names one), its registry and health services.
func serveCatalog(t testing.TB, ex *exportedCatalog) *servedCatalog {
	t.Helper()
	ctx := context.Background()
	log := logrus.New()
	log.SetOutput(io.Discard)
	cacheDir := ex.cacheDir
	if cacheDir == "" {
		cacheDir = t.TempDir()
	}
	store, err := cache.New(cacheDir, cache.WithLog(logrus.NewEntry(log)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	fsys := os.DirFS(ex.configs)
	if ex.cacheDir != "" {
		// --cache-dir without --cache-enforce-integrity=false: opm serve refuses to
		// start unless the cache in the image matches the configs.
		if err := store.CheckIntegrity(ctx, fsys); err != nil {
			t.Fatalf("%s: opm serve --cache-dir would not start: %v", ex.ref, err)
		}
		if err := store.Load(ctx); err != nil {
			t.Fatalf("%s: load cache: %v", ex.ref, err)
		}
	} else if err := cache.LoadOrRebuild(ctx, store, fsys); err != nil {
		t.Fatalf("%s: opm serve cannot build its cache: %v", ex.ref, err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	api.RegisterRegistryServer(gs, server.NewRegistryServer(store))
	health.RegisterHealthServer(gs, server.NewHealthServer())
	go func() { _ = gs.Serve(lis) }()
	t.Cleanup(gs.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &servedCatalog{client: api.NewRegistryClient(conn), health: health.NewHealthClient(conn)}
}

// recv drains a server stream.
func recv[T any](s interface{ Recv() (T, error) }) ([]T, error) {
	var out []T
	for {
		m, err := s.Recv()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, m)
	}
}

// entryKey is a channel entry as the registry reports it.
type entryKey struct{ pkg, channel, bundle, replaces string }

func entryKeys(es []*api.ChannelEntry) []entryKey {
	out := make([]entryKey, 0, len(es))
	for _, e := range es {
		out = append(out, entryKey{e.PackageName, e.ChannelName, e.BundleName, e.Replaces})
	}
	sortEntries(out)
	return out
}

func sortEntries(es []entryKey) {
	sort.Slice(es, func(i, j int) bool {
		a, b := es[i], es[j]
		return fmt.Sprint(a.pkg, "\x00", a.channel, "\x00", a.bundle, "\x00", a.replaces) < fmt.Sprint(b.pkg, "\x00", b.channel, "\x00", b.bundle, "\x00", b.replaces)
	})
}

type gvk struct{ group, version, kind string }

// bundleFacts are airlock's view of one bundle in one channel.
type bundleFacts struct {
	pkg, channel string
	entry        fbc.ChannelEntry
	bundle       *fbc.Bundle
	version      string
	gvks         []gvk
}

func propsOf(b *fbc.Bundle, typ string) []json.RawMessage {
	var out []json.RawMessage
	for _, p := range b.Properties {
		if p.Type == typ {
			out = append(out, p.Value)
		}
	}
	return out
}

func factsOf(t testing.TB, pkg, channel string, e fbc.ChannelEntry, b *fbc.Bundle) bundleFacts {
	f := bundleFacts{pkg: pkg, channel: channel, entry: e, bundle: b}
	for _, v := range propsOf(b, fbc.PropertyPackage) {
		var p struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal(v, &p); err != nil {
			t.Fatalf("bundle %s: olm.package: %v", b.Name, err)
		}
		f.version = p.Version
	}
	for _, v := range propsOf(b, fbc.PropertyGVK) {
		var g struct{ Group, Version, Kind string }
		if err := json.Unmarshal(v, &g); err != nil {
			t.Fatalf("bundle %s: olm.gvk: %v", b.Name, err)
		}
		f.gvks = append(f.gvks, gvk{g.Group, g.Version, g.Kind})
	}
	sortGVKs(f.gvks)
	return f
}

func sortGVKs(g []gvk) {
	sort.Slice(g, func(i, j int) bool { return fmt.Sprint(g[i]) < fmt.Sprint(g[j]) })
}

// checkBundle compares a served bundle with airlock's facts. The registry's
// single-bundle lookups (GetBundle, GetBundleForChannel, GetBundleThatReplaces)
// answer with the upgrade edges trimmed (no replaces, no skips): trimmed says to
// expect that; ListBundles keeps them.
func checkBundle(t testing.TB, what string, got *api.Bundle, want bundleFacts, trimmed bool) {
	t.Helper()
	var provided []gvk
	for _, g := range got.ProvidedApis {
		provided = append(provided, gvk{g.Group, g.Version, g.Kind})
	}
	sortGVKs(provided)
	skips := append([]string(nil), got.Skips...)
	wantSkips := append([]string(nil), want.entry.Skips...)
	wantReplaces := want.entry.Replaces
	if trimmed {
		wantSkips, wantReplaces = nil, ""
	}
	sort.Strings(skips)
	sort.Strings(wantSkips)
	type cmp struct {
		field     string
		got, want any
	}
	for _, c := range []cmp{
		{"csvName", got.CsvName, want.bundle.Name},
		{"packageName", got.PackageName, want.pkg},
		{"channelName", got.ChannelName, want.channel},
		{"bundlePath", got.BundlePath, want.bundle.Image},
		{"version", got.Version, want.version},
		{"replaces", got.Replaces, wantReplaces},
		{"skipRange", got.SkipRange, want.entry.SkipRange},
		{"skips", fmt.Sprint(skips), fmt.Sprint(wantSkips)},
		{"providedApis", fmt.Sprint(provided), fmt.Sprint(want.gvks)},
		{"properties", servedProps(got), airlockProps(want.bundle)},
	} {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %s is %v, airlock says %v", what, c.field, c.got, c.want)
		}
	}
}

// servedProps and airlockProps render properties as sorted "type=value" strings
// (values as compact JSON). The registry leaves out bundle objects and CSV
// metadata, so as not to grow the CSVs OLM stores.
func servedProps(b *api.Bundle) []string {
	var out []string
	for _, p := range b.Properties {
		out = append(out, p.Type+"="+compactJSON(json.RawMessage(p.Value)))
	}
	sort.Strings(out)
	return out
}

func airlockProps(b *fbc.Bundle) []string {
	var out []string
	for _, p := range b.Properties {
		if p.Type == fbc.PropertyBundleObject || p.Type == fbc.PropertyCSVMetadata {
			continue
		}
		out = append(out, p.Type+"="+compactJSON(p.Value))
	}
	sort.Strings(out)
	return out
}

func compactJSON(v json.RawMessage) string {
	var x any
	if err := json.Unmarshal(v, &x); err != nil {
		return "invalid JSON: " + string(v)
	}
	b, _ := json.Marshal(x)
	return string(b)
}
