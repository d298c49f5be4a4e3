package conformance

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing/fstest"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// depCatalogCount is how many catalogs with dependency chains the oracle
// comparison generates (seeds 1 to depCatalogCount).
const depCatalogCount = 40

// genPkg is a package being generated.
type genPkg struct {
	name     string
	versions []semver.Version
	bundles  []string
}

// depCatalog generates, from seed, a small valid catalog whose bundles require
// one another: 2 to 5 packages of 2 to 8 bundles (pre-releases, build metadata),
// a stable channel without pre-releases and a candidate channel with every
// bundle (either may be the default), sometimes a fast channel, graphs of plain
// replaces chains, skips that hide entries, and skips with skipRange; bundles
// provide their package's GVK (a v2 of it from the middle version on, one shared
// GVK in two packages) and require other packages (ranges, ||, exact versions,
// ranges nothing satisfies, missing packages, pre-release bounds, cycles) and
// GVKs (provided, provided by pre-releases only, provided nowhere).
func depCatalog(seed uint64) *declcfg.DeclarativeConfig {
	r := rand.New(rand.NewPCG(seed, 0x64657073))
	cfg := &declcfg.DeclarativeConfig{}
	pkgs := make([]*genPkg, 2+r.IntN(4))
	for i := range pkgs {
		gp := &genPkg{name: fmt.Sprintf("p%d", i)}
		v := semver.Version{Major: uint64(r.IntN(3))}
		pendingRelease := false
		for j := range 2 + r.IntN(7) {
			if !pendingRelease {
				if r.IntN(3) == 0 {
					v.Minor, v.Patch = v.Minor+1, 0
				} else {
					v.Patch++
				}
			}
			kind := r.IntN(6)
			if pendingRelease {
				kind = 5 // the release of the previous candidate
			}
			pendingRelease = false
			ver := v
			switch kind {
			case 0: // a release candidate, maybe followed by its release
				ver.Pre = []semver.PRVersion{{VersionStr: "rc"}, {VersionNum: uint64(1 + r.IntN(2)), IsNum: true}}
				pendingRelease = r.IntN(2) == 0
			case 1:
				ver.Build = []string{fmt.Sprintf("b%d", j)}
			}
			gp.versions = append(gp.versions, ver)
			gp.bundles = append(gp.bundles, fmt.Sprintf("%s.b%d", gp.name, j))
		}
		pkgs[i] = gp
	}
	gvk := func(p *genPkg, ver string) property.Property {
		return property.MustBuildGVK(p.name+".example.com", ver, "K"+p.name)
	}
	for pi, gp := range pkgs {
		def := "stable"
		if r.IntN(3) == 0 {
			def = "candidate"
		}
		var stable, candidate []int
		for j, v := range gp.versions {
			candidate = append(candidate, j)
			if len(v.Pre) == 0 {
				stable = append(stable, j)
			}
		}
		if len(stable) == 0 {
			def = "candidate"
		}
		cfg.Packages = append(cfg.Packages, declcfg.Package{Schema: declcfg.SchemaPackage, Name: gp.name, DefaultChannel: def})
		chans := map[string][]int{"candidate": candidate}
		if len(stable) > 0 {
			chans["stable"] = stable
		}
		if len(candidate) > 2 && r.IntN(2) == 0 {
			chans["fast"] = candidate[len(candidate)/2:]
		}
		for _, cn := range []string{"candidate", "fast", "stable"} {
			if idx, ok := chans[cn]; ok {
				cfg.Channels = append(cfg.Channels, genChannel(r, gp, cn, idx))
			}
		}
		for j, bn := range gp.bundles {
			props := []property.Property{property.MustBuildPackage(gp.name, gp.versions[j].String()), gvk(gp, "v1")}
			if j >= len(gp.bundles)/2 {
				props = append(props, gvk(gp, "v2"))
			}
			if pi < 2 && j == len(gp.bundles)-1 {
				props = append(props, property.MustBuildGVK("shared.example.com", "v1", "Shared"))
			}
			props = append(props, genRequirements(r, pkgs, gp)...)
			cfg.Bundles = append(cfg.Bundles, declcfg.Bundle{
				Schema: declcfg.SchemaBundle, Package: gp.name, Name: bn,
				Image: fmt.Sprintf("quay.io/oracle/%s-bundle:b%d", gp.name, j), Properties: props,
			})
		}
	}
	return cfg
}

// genChannel builds a channel of the bundles idx (oldest first) of gp, with a
// graph of one of four shapes: a replaces chain; a chain where some entries
// replace the one before the previous and skip the previous (hidden by skips);
// skipRange on every entry, replaces on every other one, and a head that skips
// every other entry; a chain whose head is the second highest version (it
// replaces the highest, which replaces the third).
func genChannel(r *rand.Rand, gp *genPkg, name string, idx []int) declcfg.Channel {
	ch := declcfg.Channel{Schema: declcfg.SchemaChannel, Package: gp.name, Name: name}
	shape := r.IntN(4)
	for k, j := range idx {
		e := declcfg.ChannelEntry{Name: gp.bundles[j]}
		switch {
		case k == 0:
			if r.IntN(2) == 0 {
				e.Replaces = gp.name + ".old" // a tail replacing a bundle not in the catalog
			}
		case shape == 1 && k >= 2 && k%3 == 2: // skips hide the entry in between
			e.Replaces = gp.bundles[idx[k-2]]
			e.Skips = []string{gp.bundles[idx[k-1]]}
		case shape == 2 && k == len(idx)-1: // the head skips everything, no replaces
			for _, x := range idx[:k] {
				e.Skips = append(e.Skips, gp.bundles[x])
			}
			e.SkipRange = "<" + gp.versions[j].String()
		case shape == 2:
			e.SkipRange = "<" + gp.versions[j].String()
			if k%2 == 1 {
				e.Replaces = gp.bundles[idx[k-1]]
			}
		case shape == 3 && len(idx) >= 3 && k == len(idx)-1: // the head is not the highest version:
			e.Replaces = gp.bundles[idx[k-2]] // the highest replaces the third highest,
		case shape == 3 && len(idx) >= 3 && k == len(idx)-2: // and is replaced by the second highest
			e.Replaces = gp.bundles[idx[k+1]]
		default:
			e.Replaces = gp.bundles[idx[k-1]]
		}
		ch.Entries = append(ch.Entries, e)
	}
	return ch
}

// genRequirements draws the requirements of one bundle of gp.
func genRequirements(r *rand.Rand, pkgs []*genPkg, gp *genPkg) []property.Property {
	var props []property.Property
	other := pkgs[r.IntN(len(pkgs))]
	if other == gp {
		return nil
	}
	vs := other.versions
	v := func() semver.Version { x := vs[r.IntN(len(vs))]; x.Build = nil; return x }
	switch r.IntN(12) {
	case 0:
		props = append(props, property.MustBuildPackageRequired(other.name, ">="+v().String()))
	case 1:
		a, b := v(), v()
		if a.GT(b) {
			a, b = b, a
		}
		props = append(props, property.MustBuildPackageRequired(other.name, ">="+a.String()+" <"+b.String()))
	case 2:
		props = append(props, property.MustBuildPackageRequired(other.name, "="+v().String()+" || >="+v().String()))
	case 3:
		props = append(props, property.MustBuildPackageRequired(other.name, "<"+v().String()))
	case 4:
		props = append(props, property.MustBuildPackageRequired(other.name, ">=99.0.0"))
	case 5:
		props = append(props, property.MustBuildPackageRequired("ghost", ">=0.0.0"))
	case 6:
		x := v()
		x.Pre = []semver.PRVersion{{IsNum: true}}
		props = append(props, property.MustBuildPackageRequired(other.name, "<"+x.String()))
	case 7:
		props = append(props, property.MustBuildGVKRequired(other.name+".example.com", "v1", "K"+other.name))
	case 8:
		props = append(props, property.MustBuildGVKRequired(other.name+".example.com", "v2", "K"+other.name))
	case 9:
		props = append(props, property.MustBuildGVKRequired("shared.example.com", "v1", "Shared"))
	case 10:
		props = append(props, property.MustBuildGVKRequired("ghost.example.com", "v1", "Ghost"))
	}
	return props
}

// depCatalogFS is cfg written with opm's JSON writer, as an in-memory catalog.
func depCatalogFS(cfg *declcfg.DeclarativeConfig) (fstest.MapFS, error) {
	var buf bytes.Buffer
	if err := declcfg.WriteJSON(*cfg, &buf); err != nil {
		return nil, err
	}
	return fstest.MapFS{"catalog.json": {Data: buf.Bytes()}}, nil
}
