package conformance

import (
	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// graphMutations change the channel graph: entries, heads, cycles, duplicates.
var graphMutations = []mutation{
	{name: "unchanged", fn: func(p *pkgDocs) bool { return p.pkg() != nil }},
	{name: "drop-middle-entry", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		chain := chainOf(ch)
		if len(chain) < 3 {
			return false
		}
		drop := chain[1]
		ch.Entries = removeEntry(ch.Entries, drop)
		return true
	}},
	{name: "drop-head-entry", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil || len(ch.Entries) < 2 {
			return false
		}
		h := head(ch)
		if h == "" {
			return false
		}
		ch.Entries = removeEntry(ch.Entries, h)
		return true
	}},
	{name: "drop-bundle", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil || len(ch.Entries) == 0 {
			return false
		}
		name := ch.Entries[len(ch.Entries)/2].Name
		n := len(p.cfg.Bundles)
		p.cfg.Bundles = filter(p.cfg.Bundles, func(b declcfg.Bundle) bool { return b.Name != name })
		return len(p.cfg.Bundles) < n
	}},
	{name: "second-head", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		b := p.bundle(head(ch))
		if b == nil {
			return false
		}
		n := p.newBundle(b, "-second-head", "999.0.0")
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: n})
		return true
	}},
	{name: "new-head-replaces-head", fn: func(p *pkgDocs) bool { // valid
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		h := head(ch)
		b := p.bundle(h)
		if b == nil {
			return false
		}
		n := p.newBundle(b, "-next", "999.0.0")
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: n, Replaces: h})
		return true
	}},
	{name: "new-head-skips-head", fn: func(p *pkgDocs) bool { // valid
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		h := head(ch)
		b := p.bundle(h)
		if b == nil {
			return false
		}
		n := p.newBundle(b, "-skipper", "999.0.0")
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: n, Skips: []string{h}, SkipRange: "<999.0.0"})
		return true
	}},
	{name: "cycle", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		chain := chainOf(ch)
		if len(chain) < 2 {
			return false
		}
		tail := chain[len(chain)-1]
		for i := range ch.Entries {
			if ch.Entries[i].Name == tail {
				ch.Entries[i].Replaces = chain[0]
			}
		}
		return true
	}},
	{name: "self-replace-head", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		h := head(ch)
		for i := range ch.Entries {
			if ch.Entries[i].Name == h {
				ch.Entries[i].Replaces = h
				return true
			}
		}
		return false
	}},
	{name: "stranded", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		h := head(ch)
		b := p.bundle(h)
		if b == nil {
			return false
		}
		x := p.newBundle(b, "-stranded-x", "998.0.0")
		y := p.newBundle(b, "-stranded-y", "998.0.1")
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: x}, declcfg.ChannelEntry{Name: y, Replaces: x})
		for i := range ch.Entries {
			if ch.Entries[i].Name == h {
				ch.Entries[i].Skips = append(ch.Entries[i].Skips, y)
			}
		}
		return true
	}},
	{name: "tail-replaces-missing", fn: func(p *pkgDocs) bool { // valid
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		chain := chainOf(ch)
		if len(chain) == 0 {
			return false
		}
		tail := chain[len(chain)-1]
		for i := range ch.Entries {
			if ch.Entries[i].Name == tail {
				ch.Entries[i].Replaces = "not-in-this-catalog.v0.0.1"
			}
		}
		return true
	}},
	{name: "duplicate-bundle", fn: func(p *pkgDocs) bool {
		if len(p.cfg.Bundles) == 0 {
			return false
		}
		p.cfg.Bundles = append(p.cfg.Bundles, cloneBundle(p.cfg.Bundles[0]))
		return true
	}},
	{name: "duplicate-entry", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil || len(ch.Entries) == 0 {
			return false
		}
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: ch.Entries[0].Name})
		return true
	}},
	{name: "duplicate-channel", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		p.cfg.Channels = append(p.cfg.Channels, cloneChannel(*ch))
		return true
	}},
	{name: "duplicate-package", fn: func(p *pkgDocs) bool {
		pk := p.pkg()
		if pk == nil {
			return false
		}
		p.cfg.Packages = append(p.cfg.Packages, *pk)
		return true
	}},
	{name: "duplicate-version", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		h := head(ch)
		b := p.bundle(h)
		if b == nil {
			return false
		}
		v := packageValue(b)
		if v == nil {
			return false
		}
		ver, _ := v["version"].(string)
		n := p.newBundle(b, "-same-version", ver)
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: n, Replaces: h})
		return true
	}},
}
