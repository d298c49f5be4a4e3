// Package gen generates synthetic file-based catalogs shaped like real operator
// catalogs, for benchmarks and tests: several channels per package with
// overlapping membership, replaces chains with skips and skipRange, inlined
// olm.bundle.object manifests of a chosen size, related images mixing tags and
// digests, olm.gvk provided APIs and a few olm.package.required /
// olm.gvk.required dependencies between packages. The output is deterministic
// for given Options and valid by opm's rules.
//
// For benchmarks and tests only: the binary never links it (internal/depcheck).
package gen

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/airlock-mirror/airlock/fbc"
)

// Options describe the catalog to generate.
type Options struct {
	// Packages is the number of packages.
	Packages int
	// BundlesPerPackage is the number of bundles of each package.
	BundlesPerPackage int
	// Related is the number of relatedImages per bundle (the bundle image,
	// with an empty name, included); at least 1.
	Related int
	// ObjectKB is the size in KiB of the base64 payload of each olm.bundle.object
	// property; 0 means no inlined objects.
	ObjectKB int
	// Objects is the number of olm.bundle.object properties per bundle (default 3).
	Objects int
	// Seed makes the output reproducible.
	Seed uint64
	// Format is "json" (default) or "yaml".
	Format string
}

// Preset returns the options of a named preset: "small" (20 packages of 10
// bundles, 4 KiB objects) or "large" (300 packages of 25 bundles, 40 KiB
// objects: 7,500 bundles, about 1 GB).
func Preset(name string) (Options, error) {
	switch name {
	case "small":
		return Options{Packages: 20, BundlesPerPackage: 10, Related: 4, ObjectKB: 4, Objects: 3, Seed: 1}, nil
	case "large":
		return Options{Packages: 300, BundlesPerPackage: 25, Related: 5, ObjectKB: 40, Objects: 3, Seed: 1}, nil
	}
	return Options{}, fmt.Errorf("unknown preset %q: use small or large", name)
}

func (o Options) check() error {
	if o.Packages < 1 || o.BundlesPerPackage < 1 {
		return errors.New("generate catalog: need at least 1 package and 1 bundle per package")
	}
	if o.Related < 1 {
		return errors.New("generate catalog: related images per bundle must be at least 1 (the bundle image)")
	}
	if o.ObjectKB < 0 || o.Objects < 0 {
		return errors.New("generate catalog: object size and count cannot be negative")
	}
	return nil
}

// PackageName returns the name of the i-th generated package.
func PackageName(i int) string {
	return fmt.Sprintf("%s-operator-%03d", words[i%len(words)], i)
}

var words = []string{"alpha", "bravo", "cobalt", "delta", "ember", "falcon", "garnet", "harbor", "iris", "juniper", "kestrel", "lumen", "meridian", "nimbus", "onyx", "quartz"}

// Version returns the version of bundle j of a package: mostly patch releases,
// a minor release every 4 bundles, a major one every 12.
func Version(j int) string {
	major, minor, patch := 0, 1, 0
	for k := 1; k <= j; k++ {
		switch {
		case k%12 == 0:
			major, minor, patch = major+1, 0, 0
		case k%4 == 0:
			minor, patch = minor+1, 0
		default:
			patch++
		}
	}
	return fmt.Sprintf("%d.%d.%d", major, minor, patch)
}

// Generate writes the catalog to dir (created if needed, must be empty) as
// dir/<package>/catalog.json (or .yaml).
func Generate(ctx context.Context, opts Options, dir string) error {
	if opts.Objects == 0 && opts.ObjectKB > 0 {
		opts.Objects = 3
	}
	if err := opts.check(); err != nil {
		return err
	}
	ext := ".json"
	if opts.Format == "yaml" {
		ext = ".yaml"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("generate catalog: %w", err)
	}
	if entries, err := os.ReadDir(dir); err != nil {
		return fmt.Errorf("generate catalog: %w", err)
	} else if len(entries) > 0 {
		return fmt.Errorf("generate catalog: %s is not empty: choose a new or empty directory", dir)
	}
	for i := 0; i < opts.Packages; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := genPackage(opts, i)
		pdir := filepath.Join(dir, p.Name)
		if err := os.Mkdir(pdir, 0o755); err != nil {
			return fmt.Errorf("generate catalog: %w", err)
		}
		if err := writeFile(filepath.Join(pdir, "catalog"+ext), func(w io.Writer) error {
			return fbc.Render(ctx, &fbc.Catalog{Packages: []*fbc.Package{p}}, w, opts.Format)
		}); err != nil {
			return err
		}
	}
	return nil
}

// GenerateFS is Generate into a fresh temporary directory under tmp; it returns
// the catalog root as an fs.FS and its path.
func GenerateFS(ctx context.Context, opts Options, tmp string) (fs.FS, string, error) {
	dir, err := os.MkdirTemp(tmp, "catalog-")
	if err != nil {
		return nil, "", err
	}
	if err := Generate(ctx, opts, dir); err != nil {
		return nil, "", err
	}
	return os.DirFS(dir), dir, nil
}

func writeFile(name string, body func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("generate catalog: %w", err)
	}
	if err := body(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only called with plain maps of strings
	}
	return b
}

// channelPlan says which bundles (by index, ascending versions) a channel holds.
type channelPlan struct {
	name    string
	members []int
}

func plans(i, m int) []channelPlan {
	all := make([]int, m)
	for j := range all {
		all[j] = j
	}
	if i%5 == 0 || m < 3 {
		return []channelPlan{{"stable", all}}
	}
	return []channelPlan{
		{"candidate", all},
		{"fast", all[m/4:]},
		{"stable", all[m/2:]},
	}
}

func genPackage(opts Options, i int) *fbc.Package {
	rng := rand.New(rand.NewPCG(opts.Seed, uint64(i)))
	name := PackageName(i)
	m := opts.BundlesPerPackage
	p := &fbc.Package{
		Name:           name,
		DefaultChannel: "stable",
		Description:    fmt.Sprintf("%s manages %s widgets on Kubernetes.\n\nGenerated by airlock's catalog generator.", name, words[i%len(words)]),
		Icon:           &fbc.Icon{Data: []byte(fmt.Sprintf("<svg xmlns=\"http://www.w3.org/2000/svg\"><title>%s</title></svg>", name)), MediaType: "image/svg+xml"},
		Declared:       1,
	}
	bundleName := func(j int) string { return name + ".v" + Version(j) }
	for _, pl := range plans(i, m) {
		ch := &fbc.Channel{Name: pl.name, Package: name}
		for k, j := range pl.members {
			e := fbc.ChannelEntry{Name: bundleName(j)}
			switch {
			case k == 0 && j > 0:
				// The tail replaces a bundle that is not in the channel (dangling, valid).
				e.Replaces = bundleName(j - 1)
			case k == 0:
			case k >= 2 && k%7 == 0:
				// Skip the previous entry and replace the one before it.
				e.Replaces = bundleName(pl.members[k-2])
				e.Skips = []string{bundleName(pl.members[k-1])}
			default:
				e.Replaces = bundleName(pl.members[k-1])
			}
			if k >= 1 && (k%5 == 0 || k == len(pl.members)-1) {
				e.SkipRange = fmt.Sprintf(">=%s <%s", Version(pl.members[max(0, k-3)]), Version(j))
			}
			ch.Entries = append(ch.Entries, e)
		}
		// Entries newest first, as catalogs often list them.
		for a, b := 0, len(ch.Entries)-1; a < b; a, b = a+1, b-1 {
			ch.Entries[a], ch.Entries[b] = ch.Entries[b], ch.Entries[a]
		}
		p.Channels = append(p.Channels, ch)
	}
	group := name + ".example.com"
	payload := newPayload(rng, opts.ObjectKB)
	for j := 0; j < m; j++ {
		v := Version(j)
		b := &fbc.Bundle{Name: bundleName(j), Package: name}
		repo := "quay.io/example/" + name + "-bundle"
		if i%2 == 0 {
			b.Image = repo + "@" + digest(repo+v)
		} else {
			b.Image = repo + ":v" + v
		}
		b.Properties = append(b.Properties,
			fbc.Property{Type: fbc.PropertyPackage, Value: mustJSON(map[string]string{"packageName": name, "version": v})},
		)
		for g := 0; g < 1+i%3; g++ {
			b.Properties = append(b.Properties, fbc.Property{Type: fbc.PropertyGVK,
				Value: mustJSON(map[string]string{"group": group, "kind": fmt.Sprintf("Widget%d", g), "version": "v1"})})
		}
		if i%7 == 3 && i > 0 {
			b.Properties = append(b.Properties, fbc.Property{Type: fbc.PropertyPackageRequired,
				Value: mustJSON(map[string]string{"packageName": PackageName(i - 1), "versionRange": ">=0.1.0"})})
		}
		if i%11 == 5 && i > 1 {
			b.Properties = append(b.Properties, fbc.Property{Type: fbc.PropertyGVKRequired,
				Value: mustJSON(map[string]string{"group": PackageName(i-2) + ".example.com", "kind": "Widget0", "version": "v1"})})
		}
		for o := 0; o < opts.Objects && opts.ObjectKB > 0; o++ {
			kind := "CustomResourceDefinition"
			if o == 0 {
				kind = "ClusterServiceVersion"
			}
			b.Properties = append(b.Properties, fbc.Property{Type: fbc.PropertyBundleObject,
				Value: payload.object(kind, b.Name, o)})
		}
		b.RelatedImages = append(b.RelatedImages, fbc.RelatedImage{Name: "", Image: b.Image})
		for r := 1; r < opts.Related; r++ {
			var ri fbc.RelatedImage
			switch r {
			case 1:
				repo := "quay.io/example/" + name
				ri = fbc.RelatedImage{Name: "operator", Image: repo + "@" + digest(repo+v)}
			default:
				repo := fmt.Sprintf("registry.example.com/%s/component-%d", name, r)
				if (j+r)%3 == 0 {
					ri = fbc.RelatedImage{Name: fmt.Sprintf("component-%d", r), Image: repo + ":v" + v}
				} else {
					ri = fbc.RelatedImage{Name: fmt.Sprintf("component-%d", r), Image: repo + "@" + digest(repo+v)}
				}
			}
			b.RelatedImages = append(b.RelatedImages, ri)
		}
		p.Bundles = append(p.Bundles, b)
	}
	return p
}

// payload builds olm.bundle.object values of a fixed size from a per-package
// block of pseudo-random text.
type payload struct {
	size  int // bytes of base64 per object
	block []byte
}

func newPayload(rng *rand.Rand, kb int) *payload {
	const alphabet = "abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ 0123456789.,\n"
	raw := kb * 1024 * 3 / 4
	block := make([]byte, raw)
	for k := range block {
		block[k] = alphabet[rng.IntN(len(alphabet))]
	}
	return &payload{size: kb * 1024, block: block}
}

func (p *payload) object(kind, name string, n int) json.RawMessage {
	head := fmt.Sprintf(`{"apiVersion":"example.com/v1","kind":%q,"metadata":{"name":"%s-%d"},"spec":{"description":"`, kind, name, n)
	tail := `"}}`
	raw := len(p.block)
	body := max(0, raw-len(head)-len(tail))
	// Rotate the block so objects differ.
	off := (n * 7919) % max(1, len(p.block))
	text := make([]byte, 0, raw)
	text = append(text, head...)
	for len(text) < len(head)+body {
		chunk := p.block[off:]
		if need := len(head) + body - len(text); len(chunk) > need {
			chunk = chunk[:need]
		}
		for _, c := range chunk {
			if c == '\n' {
				text = append(text, '\\', 'n')
			} else {
				text = append(text, c)
			}
		}
		off = 0
	}
	text = append(text[:min(len(text), len(head)+body)], tail...)
	enc := base64.StdEncoding.EncodeToString(text)
	return mustJSON(map[string]string{"data": enc})
}
