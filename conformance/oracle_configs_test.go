package conformance

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/imageset"
)

// oracleConfigs generates the configurations the oracle comparison runs on a
// catalog, from the oracle's view of it, deterministically from seed: every kind
// of selection (heads, packages, channels, ranges at both levels, full, bundles,
// defaultChannel), bounds drawn from each channel's versions and their edge cases
// (min == max, pre-releases, build metadata, bounds between versions or outside
// the channel, empty results), refused combinations, each with dependencies
// resolved and skipped. maxPkgs caps how many packages get per-package cases.
func oracleConfigs(cat *oCatalog, seed uint64, maxPkgs int) []filterConfig {
	r := rand.New(rand.NewPCG(seed, 0x6f7261636c65))
	var out []filterConfig
	add := func(name string, op imageset.Operator) {
		out = append(out, filterConfig{name, op})
		op.SkipDependencies = true
		out = append(out, filterConfig{name + "/skip-dependencies", op})
	}
	pkgOp := func(ps ...imageset.IncludePackage) imageset.Operator { return imageset.Operator{Packages: ps} }
	add("heads-only", imageset.Operator{})
	out = append(out, filterConfig{"full", imageset.Operator{Full: true}})
	names := cat.names
	if len(names) > maxPkgs {
		names = nil
		for _, i := range r.Perm(len(cat.names))[:maxPkgs] {
			names = append(names, cat.names[i])
		}
		sort.Strings(names)
	}
	if len(names) >= 2 {
		a, b := names[0], names[len(names)-1]
		add("two-packages", pkgOp(imageset.IncludePackage{Name: a}, imageset.IncludePackage{Name: b}))
		add("two-packages-full", imageset.Operator{Full: true, Packages: []imageset.IncludePackage{{Name: a}, {Name: b}}})
	}
	add("unknown-package", pkgOp(imageset.IncludePackage{Name: "no-such-package"}))
	for _, pn := range names {
		p := cat.pkgs[pn]
		name := func(s string) string { return pn + "/" + s }
		add(name("package"), pkgOp(imageset.IncludePackage{Name: pn}))
		add(name("package-full"), imageset.Operator{Full: true, Packages: []imageset.IncludePackage{{Name: pn}}})
		add(name("unknown-channel"), pkgOp(imageset.IncludePackage{Name: pn, Channels: []imageset.IncludeChannel{{Name: "no-such-channel"}}}))
		add(name("unknown-default-channel"), pkgOp(imageset.IncludePackage{Name: pn, DefaultChannel: "no-such-channel"}))
		add(name("unknown-bundle"), pkgOp(imageset.IncludePackage{Name: pn, SelectedBundles: []imageset.SelectedBundle{{Name: "no-such-bundle"}}}))
		chans := p.chanNames
		if len(chans) > 4 {
			chans = chans[:4]
		}
		for _, cn := range chans {
			ch := p.chans[cn]
			cname := func(s string) string { return pn + "/" + cn + "/" + s }
			one := func(ic imageset.IncludeChannel, def string) imageset.IncludePackage {
				return imageset.IncludePackage{Name: pn, DefaultChannel: def, Channels: []imageset.IncludeChannel{ic}}
			}
			add(cname("channel"), pkgOp(one(imageset.IncludeChannel{Name: cn}, "")))
			add(cname("channel-as-default"), pkgOp(one(imageset.IncludeChannel{Name: cn}, cn)))
			add(cname("channel-full"), imageset.Operator{Full: true, Packages: []imageset.IncludePackage{one(imageset.IncludeChannel{Name: cn}, cn)}})
			if cn != p.defaultChannel && p.chans[p.defaultChannel] != nil {
				add(cname("channel-and-default"), pkgOp(imageset.IncludePackage{Name: pn, Channels: []imageset.IncludeChannel{{Name: p.defaultChannel}, {Name: cn}}}))
			}
			for _, other := range p.chanNames {
				if other == cn {
					continue
				}
				// A defaultChannel the configuration does not list.
				add(cname("default-not-listed"), pkgOp(one(imageset.IncludeChannel{Name: cn}, other)))
				// A bundle selected in a channel that does not hold it (beside
				// one that it holds).
				for _, en := range ch.order {
					if p.chans[other].entries[en] == nil {
						sb := []imageset.SelectedBundle{{Name: en}, {Name: p.chans[other].order[0]}}
						add(cname("bundle-elsewhere"), pkgOp(imageset.IncludePackage{Name: pn, DefaultChannel: other,
							Channels: []imageset.IncludeChannel{{Name: other}}, SelectedBundles: sb}))
						break
					}
				}
				break
			}
			for _, b := range oracleBounds(p, ch, r) {
				ib := imageset.IncludeBundle{MinVersion: b.min, MaxVersion: b.max}
				add(cname("channel-range-"+b.name), pkgOp(one(imageset.IncludeChannel{Name: cn, IncludeBundle: ib}, cn)))
				add(cname("package-range-"+b.name), pkgOp(imageset.IncludePackage{Name: pn, IncludeBundle: ib}))
			}
			if bs := sortedEntries(p, ch); len(bs) > 0 {
				b := bs[r.IntN(len(bs))]
				ib := imageset.IncludeBundle{MinVersion: b.version.String(), MaxVersion: b.version.String()}
				add(cname("range-beside-default"), pkgOp(imageset.IncludePackage{Name: pn, Channels: []imageset.IncludeChannel{{Name: p.defaultChannel}, {Name: cn, IncludeBundle: ib}}}))
				add(cname("range-and-full"), imageset.Operator{Full: true, Packages: []imageset.IncludePackage{{Name: pn, IncludeBundle: ib}}})
				add(cname("range-both-levels"), pkgOp(imageset.IncludePackage{Name: pn, IncludeBundle: ib, Channels: []imageset.IncludeChannel{{Name: cn, IncludeBundle: ib}}}))
				add(cname("bundles-and-range"), pkgOp(imageset.IncludePackage{Name: pn, IncludeBundle: ib, SelectedBundles: []imageset.SelectedBundle{{Name: b.name}}}))
			}
			for i, en := range pickEntries(ch, r, 2) {
				sb := []imageset.SelectedBundle{{Name: en}}
				add(cname(fmt.Sprintf("bundle-%d", i)), pkgOp(imageset.IncludePackage{Name: pn, DefaultChannel: cn, Channels: []imageset.IncludeChannel{{Name: cn}}, SelectedBundles: sb}))
				add(cname(fmt.Sprintf("bundle-all-channels-%d", i)), pkgOp(imageset.IncludePackage{Name: pn, SelectedBundles: sb}))
			}
		}
	}
	return out
}

// sortedEntries are the entries of ch with a valid version, lowest first.
func sortedEntries(p *oPkg, ch *oChan) []*oBundle {
	var bs []*oBundle
	for n := range ch.entries {
		if b := p.bundles[n]; b != nil && b.verOK {
			bs = append(bs, b)
		}
	}
	sort.Slice(bs, func(i, j int) bool {
		if c := bs[i].version.Compare(bs[j].version); c != 0 {
			return c < 0
		}
		return bs[i].name < bs[j].name
	})
	return bs
}

// pickEntries draws up to n entry names of ch.
func pickEntries(ch *oChan, r *rand.Rand, n int) []string {
	names := append([]string(nil), ch.order...)
	sort.Strings(names)
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	if len(names) > n {
		names = names[:n]
	}
	return names
}

type oBound struct{ name, min, max string }

// oracleBounds draws minVersion/maxVersion pairs from the versions of ch.
func oracleBounds(p *oPkg, ch *oChan, r *rand.Rand) []oBound {
	bs := sortedEntries(p, ch)
	if len(bs) == 0 {
		return nil
	}
	v := func(i int) string { return bs[i].version.String() }
	last := len(bs) - 1
	i, j := r.IntN(len(bs)), r.IntN(len(bs))
	if i > j {
		i, j = j, i
	}
	mid := bs[len(bs)/2].version
	above := semver.Version{Major: bs[last].version.Major + 1}
	between := mid
	between.Patch++
	between.Pre, between.Build = nil, nil
	noBuild := func(x semver.Version) semver.Version { x.Build = nil; return x }
	withBuild := noBuild(mid)
	withBuild.Build = []string{"conformance", "7"}
	preOf := noBuild(mid)
	preOf.Pre = []semver.PRVersion{{IsNum: true}}
	bounds := []oBound{
		{"all", v(0), v(last)},
		{"min-eq-max", v(j), v(j)},
		{"min-eq-max-mid", mid.String(), mid.String()},
		{"random", v(i), v(j)},
		{"min-only", v(i), ""},
		{"max-only", "", v(j)},
		{"lowest-only", "", v(0)},
		{"head-and-up", v(last), ""},
		{"between-versions", between.String(), ""},
		{"max-between-versions", "", between.String()},
		{"build-metadata", withBuild.String(), withBuild.String()},
		{"prerelease-floor", preOf.String(), ""},
		{"prerelease-ceiling", "", preOf.String()},
		{"above-all", above.String(), ""},
		{"below-all", "", "0.0.0-0"},
		{"min-above-max", v(j), v(0)},
		{"v-prefix", "v" + v(i), ""},
		{"not-full", fmt.Sprintf("%d.%d", bs[i].version.Major, bs[i].version.Minor), ""},
	}
	if bs[j].version.Compare(bs[0].version) <= 0 {
		bounds = slices.DeleteFunc(bounds, func(b oBound) bool { return b.name == "min-above-max" })
	}
	return bounds
}
