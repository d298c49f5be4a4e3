package conformance

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// The fuzz target mutates the small seed catalog testdata/seed/ with a sequence
// of edits chosen by the input bytes (two bytes per edit: which edit, and an
// argument picking entries and values) and asserts that opm validate and airlock
// (with property values, and with heavy values elided as the CLI does) accept
// and reject the same catalogs.

var (
	seedOnce sync.Once
	seedCfg  *declcfg.DeclarativeConfig
	seedErr  error
)

func seedCatalog(t testing.TB) *declcfg.DeclarativeConfig {
	seedOnce.Do(func() {
		seedCfg, seedErr = opmLoad(context.Background(), filepath.Join("testdata", "seed"))
	})
	if seedErr != nil {
		t.Fatalf("load the seed catalog: %v", seedErr)
	}
	return seedCfg
}

// Pools of values the edits draw from: names of the seed, their near misses and
// malformed values.
var (
	namePool      = []string{"foo.v0.1.0", "foo.v0.2.0", "foo.v0.2.5", "foo.v0.3.0", "foo.v9.9.9", "", "Foo.V0.1.0"}
	skipRangePool = []string{"", "<0.2.0", ">=0.1.0 <0.3.0", "<0.3.0 || >1.0.0", ">=0.1.0 <<2", "<v0.2.0", "0.1.x"}
	versionPool   = []string{"0.1.0", "0.2.0", "0.2.5", "0.3.0", "1.0.0-rc.1", "1.0", "01.0.0", "1.0.0+build", "v1.0.0", "0.3.0+other"}
	channelPool   = []string{"stable", "fast", "", "beta", "Stable"}
	imagePool     = []string{"quay.io/example/foo-bundle:v1", "", "quay.io/Example/foo:1", "foo", "quay.io/e/f@sha256:bad", "localhost:5000/a/b:c"}
	packagePool   = []string{"foo", "bar", "", "Foo", "foo-"}
)

func pick[T any](pool []T, arg byte) T { return pool[int(arg)%len(pool)] }

// fuzzEdit is one edit of the sequence.
type fuzzEdit func(p *pkgDocs, arg byte) bool

var fuzzEdits = func() []fuzzEdit {
	entry := func(p *pkgDocs, arg byte) *declcfg.ChannelEntry {
		if len(p.cfg.Channels) == 0 {
			return nil
		}
		ch := &p.cfg.Channels[int(arg)%len(p.cfg.Channels)]
		if len(ch.Entries) == 0 {
			return nil
		}
		return &ch.Entries[int(arg/3)%len(ch.Entries)]
	}
	bundle := func(p *pkgDocs, arg byte) *declcfg.Bundle {
		if len(p.cfg.Bundles) == 0 {
			return nil
		}
		return &p.cfg.Bundles[int(arg)%len(p.cfg.Bundles)]
	}
	edits := []fuzzEdit{
		func(p *pkgDocs, a byte) bool { // set replaces
			e := entry(p, a)
			if e == nil {
				return false
			}
			e.Replaces = pick(namePool, a/7)
			return true
		},
		func(p *pkgDocs, a byte) bool { // add a skip
			e := entry(p, a)
			if e == nil {
				return false
			}
			s := pick(namePool, a/7)
			if s == "" {
				return false // an empty skip is covered by the table
			}
			e.Skips = append(e.Skips, s)
			return true
		},
		func(p *pkgDocs, a byte) bool { // clear skips
			e := entry(p, a)
			if e == nil {
				return false
			}
			e.Skips = nil
			return true
		},
		func(p *pkgDocs, a byte) bool { // set skipRange
			e := entry(p, a)
			if e == nil {
				return false
			}
			e.SkipRange = pick(skipRangePool, a/7)
			return true
		},
		func(p *pkgDocs, a byte) bool { // rename an entry
			e := entry(p, a)
			if e == nil {
				return false
			}
			e.Name = pick(namePool, a/5)
			return true
		},
		func(p *pkgDocs, a byte) bool { // remove an entry
			if len(p.cfg.Channels) == 0 {
				return false
			}
			ch := &p.cfg.Channels[int(a)%len(p.cfg.Channels)]
			if len(ch.Entries) == 0 {
				return false
			}
			i := int(a/3) % len(ch.Entries)
			ch.Entries = append(ch.Entries[:i:i], ch.Entries[i+1:]...)
			return true
		},
		func(p *pkgDocs, a byte) bool { // add an entry
			if len(p.cfg.Channels) == 0 {
				return false
			}
			ch := &p.cfg.Channels[int(a)%len(p.cfg.Channels)]
			ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: pick(namePool, a/3), Replaces: pick(namePool, a/5)})
			return true
		},
		func(p *pkgDocs, a byte) bool { // set a bundle's version
			b := bundle(p, a)
			if b == nil {
				return false
			}
			saved := *p
			p.cfg.Bundles = []declcfg.Bundle{*b}
			ok := setPackageField(p, "version", pick(versionPool, a/5))
			nb := p.cfg.Bundles[0]
			*p = saved
			*b = nb
			return ok
		},
		func(p *pkgDocs, a byte) bool { // rename a bundle
			b := bundle(p, a)
			if b == nil {
				return false
			}
			b.Name = pick(namePool, a/5)
			return true
		},
		func(p *pkgDocs, a byte) bool { // set a bundle's package
			b := bundle(p, a)
			if b == nil {
				return false
			}
			b.Package = pick(packagePool, a/5)
			return true
		},
		func(p *pkgDocs, a byte) bool { // set a bundle's image
			b := bundle(p, a)
			if b == nil {
				return false
			}
			b.Image = pick(imagePool, a/5)
			return true
		},
		func(p *pkgDocs, a byte) bool { // remove a bundle
			if len(p.cfg.Bundles) == 0 {
				return false
			}
			i := int(a) % len(p.cfg.Bundles)
			p.cfg.Bundles = append(p.cfg.Bundles[:i:i], p.cfg.Bundles[i+1:]...)
			return true
		},
		func(p *pkgDocs, a byte) bool { // set the default channel
			if len(p.cfg.Packages) == 0 {
				return false
			}
			p.cfg.Packages[0].DefaultChannel = pick(channelPool, a)
			return true
		},
		func(p *pkgDocs, a byte) bool { // rename a channel
			if len(p.cfg.Channels) == 0 {
				return false
			}
			p.cfg.Channels[int(a)%len(p.cfg.Channels)].Name = pick(channelPool, a/3)
			return true
		},
		func(p *pkgDocs, a byte) bool { // set a channel's package
			if len(p.cfg.Channels) == 0 {
				return false
			}
			p.cfg.Channels[int(a)%len(p.cfg.Channels)].Package = pick(packagePool, a/3)
			return true
		},
		func(p *pkgDocs, a byte) bool { // retarget a deprecation
			if len(p.cfg.Deprecations) == 0 || len(p.cfg.Deprecations[0].Entries) == 0 {
				return false
			}
			d := &p.cfg.Deprecations[0]
			d.Entries = append([]declcfg.DeprecationEntry(nil), d.Entries...)
			ref := &d.Entries[int(a)%len(d.Entries)].Reference
			ref.Schema = pick([]string{declcfg.SchemaBundle, declcfg.SchemaChannel, declcfg.SchemaPackage, "olm.unknown", ""}, a/3)
			ref.Name = pick(append(append([]string{}, namePool...), channelPool...), a/7)
			return true
		},
	}
	// Every mutation of the table whose verdict is the same on both sides.
	for _, m := range mutations {
		if m.diff != nil {
			continue
		}
		fn := m.fn
		edits = append(edits, func(p *pkgDocs, _ byte) bool { return fn(p) })
	}
	return edits
}()

const maxFuzzEdits = 8

func FuzzValidateAgreement(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1})
	f.Add([]byte{3, 4, 7, 200})
	f.Add([]byte{12, 3, 13, 1})
	f.Add([]byte{5, 0, 6, 9, 8, 2})
	f.Add([]byte{16, 0, 17, 0, 20, 0})
	f.Add([]byte{1, 7, 1, 14, 2, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		seed := seedCatalog(t)
		parts := split(seed)
		p := &pkgDocs{name: "foo", cfg: *parts["foo"]}
		var applied []string
		for i := 0; i+1 < len(data) && len(applied) < maxFuzzEdits; i += 2 {
			k := int(data[i]) % len(fuzzEdits)
			if fuzzEdits[k](p, data[i+1]) {
				applied = append(applied, fmt.Sprintf("%d/%d", k, data[i+1]))
			}
		}
		dir := t.TempDir()
		if err := writeCfg(&p.cfg, filepath.Join(dir, "foo", "catalog.json")); err != nil {
			t.Fatal(err)
		}
		v := verdict(context.Background(), dir)
		if msg := check(v, nil); msg != "" {
			t.Fatalf("edits [%s]: %s", strings.Join(applied, " "), msg)
		}
	})
}
