package conformance

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
)

// recorder is a testing.TB that records failures instead of failing, so that a
// test can check that a check fails.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}
func (r *recorder) Error(args ...any)                 { r.Errorf("%s", fmt.Sprint(args...)) }
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }
func (r *recorder) Fatal(args ...any)                 { r.Error(args...); runtime.Goexit() }
func (r *recorder) Logf(string, ...any)               {}
func (r *recorder) Log(...any)                        {}
func (r *recorder) Helper()                           {}

// recorded runs fn with a recorder and returns what it reported.
func recorded(t testing.TB, fn func(tb testing.TB)) []string {
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(rec)
	}()
	<-done
	return rec.msgs
}

// checkTampering serves altered copies of a rebuilt catalog against airlock's
// unaltered view: each alteration must be reported, so the comparison of the
// served answers with airlock's can fail.
func checkTampering(t *testing.T, r *mirrorRun, ex *exportedCatalog) {
	ctx := context.Background()
	headOf := func(c *fbc.Catalog) (*fbc.Package, *fbc.Channel, *fbc.Bundle) {
		for _, p := range c.Packages {
			for _, ch := range p.Channels {
				h, err := fbc.NewGraph(ch).Head()
				if err != nil || len(ch.Entries) < 2 {
					continue
				}
				for _, b := range p.Bundles {
					if b.Name == h {
						return p, ch, b
					}
				}
			}
		}
		t.Fatal("no channel of two entries or more")
		return nil, nil, nil
	}
	cases := []struct {
		name   string
		alter  func(c *fbc.Catalog)
		expect string
	}{
		{"bundle image", func(c *fbc.Catalog) { _, _, b := headOf(c); b.Image += "-tampered" }, "bundlePath"},
		{"head provides no API", func(c *fbc.Catalog) {
			_, _, b := headOf(c)
			var keep []fbc.Property
			for _, p := range b.Properties {
				if p.Type != fbc.PropertyGVK {
					keep = append(keep, p)
				}
			}
			b.Properties = keep
		}, "GetLatestChannelEntriesThatProvide"},
		{"an entry skips another", func(c *fbc.Catalog) {
			_, ch, b := headOf(c)
			for i := range ch.Entries {
				if ch.Entries[i].Name == b.Name {
					ch.Entries[i].Skips = append(ch.Entries[i].Skips, "some-other.v0.0.1")
				}
			}
		}, "skips"},
		{"bundle dropped", func(c *fbc.Catalog) {
			p, ch, b := headOf(c)
			var es []fbc.ChannelEntry
			for _, e := range ch.Entries {
				if e.Name != b.Name {
					es = append(es, e)
				}
			}
			ch.Entries = es
			var bs []*fbc.Bundle
			for _, x := range p.Bundles {
				if x != b {
					bs = append(bs, x)
				}
			}
			p.Bundles = bs
		}, "head"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cat, err := fbc.LoadDir(ctx, ex.configs, fbc.LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c.alter(cat)
			alt := *ex
			alt.configs = t.TempDir() + "/configs"
			if err := fbc.Write(ctx, cat, alt.configs, fbc.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			msgs := recorded(t, func(tb testing.TB) { serveAndQuery(tb, r, &alt) })
			if len(msgs) == 0 {
				t.Fatalf("the altered catalog was served without a difference being reported")
			}
			if !strings.Contains(strings.Join(msgs, "\n"), c.expect) {
				t.Errorf("reported, but not %q: %v", c.expect, msgs)
			}
		})
	}
}
