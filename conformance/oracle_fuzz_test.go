package conformance

import (
	"context"
	"fmt"
	"testing"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/imageset"
)

// FuzzSelectionAgreement generates a catalog with dependency chains from seed
// (depCatalog) and a configuration from the bytes (fuzzOperator), and checks
// that prune.Filter and the oracle keep the same bundles, heads and default
// channels, or refuse for the same reason class. Its seed corpus runs with go
// test; `make conformance` fuzzes it for CONFORMANCE_FUZZTIME.
func FuzzSelectionAgreement(f *testing.F) {
	f.Add(uint64(1), []byte{})                                 // heads only, dependencies
	f.Add(uint64(2), []byte{0x01})                             // the whole catalog
	f.Add(uint64(3), []byte{0x02, 0, 0x11, 0, 1, 4})           // a channel range, no dependencies
	f.Add(uint64(4), []byte{0x00, 1, 0x02, 1, 2, 2})           // min == max at package level
	f.Add(uint64(5), []byte{0x00, 0, 0x08, 0, 3})              // a selected bundle
	f.Add(uint64(6), []byte{0x01, 0, 0x01, 2})                 // full with one channel
	f.Add(uint64(7), []byte{0x00, 0, 0x15, 1, 0x83, 0})        // a defaultChannel, a bound between versions
	f.Add(uint64(8), []byte{0x00, 0xff})                       // a package the catalog lacks
	f.Add(uint64(9), []byte{0x02, 2, 0x02, 0, 0x81, 0})        // a pre-release bound
	f.Add(uint64(10), []byte{0x00, 1, 0x0a, 0, 1, 1, 0})       // a range and bundles: refused
	f.Add(uint64(11), []byte{0x00, 0, 0, 0, 1, 0, 0, 2, 0, 0}) // three packages
	f.Fuzz(func(t *testing.T, seed uint64, data []byte) {
		cfg := depCatalog(seed % 10000)
		fsys, err := depCatalogFS(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c, err := fbc.Load(context.Background(), fsys, fbc.LoadOptions{})
		if err != nil {
			t.Fatalf("airlock cannot load generated catalog %d: %v", seed, err)
		}
		docs, err := readFBC(fsys)
		if err != nil {
			t.Fatal(err)
		}
		src := oracleCatalog(docs)
		fc := filterConfig{name: "fuzz", op: fuzzOperator(src, data)}
		if d := comparePair(src, c, fc, productSelect, nil); d != "" {
			t.Fatalf("catalog seed %d, configuration %+v: %s", seed%10000, fc.op, d)
		}
	})
}

// fuzzOperator reads an operator entry from data: a flags byte (bit 0 full, bit
// 1 skipDependencies), then per package a name byte (0xff: a name the catalog
// lacks) and a flags byte (bit 0 list a channel, bit 1 package-level range, bit
// 2 defaultChannel, bit 3 a selected bundle, bit 4 channel-level range), each
// followed by the bytes it needs: a channel byte, two bound bytes (see
// fuzzBound), a bundle byte.
func fuzzOperator(src *oCatalog, data []byte) imageset.Operator {
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	var op imageset.Operator
	flags := next()
	op.Full, op.SkipDependencies = flags&1 != 0, flags&2 != 0
	for len(data) > 0 && len(op.Packages) < 3 {
		nb := next()
		if nb == 0xff || len(src.names) == 0 {
			op.Packages = append(op.Packages, imageset.IncludePackage{Name: "no-such-package"})
			continue
		}
		p := src.pkgs[src.names[int(nb)%len(src.names)]]
		ip := imageset.IncludePackage{Name: p.name}
		pf := next()
		ch := p.chans[p.chanNames[int(next())%len(p.chanNames)]]
		bounds := func() imageset.IncludeBundle {
			return imageset.IncludeBundle{MinVersion: fuzzBound(p, ch, next()), MaxVersion: fuzzBound(p, ch, next())}
		}
		if pf&1 != 0 {
			ic := imageset.IncludeChannel{Name: ch.name}
			if pf&16 != 0 {
				ic.IncludeBundle = bounds()
			}
			ip.Channels = append(ip.Channels, ic)
		}
		if pf&2 != 0 {
			ip.IncludeBundle = bounds()
		}
		if pf&4 != 0 {
			ip.DefaultChannel = ch.name
		}
		if pf&8 != 0 && len(ch.order) > 0 {
			ip.SelectedBundles = []imageset.SelectedBundle{{Name: ch.order[int(next())%len(ch.order)]}}
		}
		op.Packages = append(op.Packages, ip)
	}
	return op
}

// fuzzBound is a bound drawn from the versions of ch: b's low 7 bits pick a
// version (0 leaves the bound unset); with the high bit set it is changed to
// the next patch version, a pre-release of it or one with build metadata.
func fuzzBound(p *oPkg, ch *oChan, b byte) string {
	bs := sortedEntries(p, ch)
	i := int(b & 0x7f)
	if i == 0 || len(bs) == 0 {
		return ""
	}
	v := bs[(i-1)%len(bs)].version
	if b&0x80 != 0 {
		switch i % 3 {
		case 0:
			v.Patch++
			v.Pre, v.Build = nil, nil
		case 1:
			v.Pre, v.Build = []semver.PRVersion{{IsNum: true}}, nil
		default:
			v.Build = []string{fmt.Sprintf("fuzz%d", i)}
		}
	}
	return v.String()
}
