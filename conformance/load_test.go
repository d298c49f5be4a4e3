package conformance

import (
	"context"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/model"

	"github.com/airlock-mirror/airlock/fbc"
)

// TestLoadAgreement loads every catalog with both loaders and compares packages,
// channels and their entries, bundles with their properties (compared as JSON
// values) and related images, deprecations and blobs of other schemas. A catalog
// one loader refuses must be refused by the other too.
func TestLoadAgreement(t *testing.T) {
	ctx := context.Background()
	for _, src := range allSources(t) {
		t.Run(src.Name, func(t *testing.T) {
			cfg, opmErr := opmLoad(ctx, src.Dir)
			ours, ourErr := fbc.LoadDir(ctx, src.Dir, fbc.LoadOptions{ElideHeavy: false})
			if opmErr != nil && ourErr == nil && strings.Contains(opmErr.Error(), "read bundle objects") {
				// opm decodes olm.bundle.object data while loading, airlock
				// when validating: the verdicts are compared by the validate tests.
				t.Skipf("opm checks bundle objects at load time: %v", opmErr)
			}
			if (opmErr == nil) != (ourErr == nil) {
				t.Fatalf("loaders disagree: opm: %v; airlock: %v", opmErr, ourErr)
			}
			if opmErr != nil {
				t.Logf("both refuse: opm: %v; airlock: %v", opmErr, ourErr)
				return
			}
			want, got := canonOpm(cfg), canonOurs(ours)
			if d := want.diff(got, 20); d != "" {
				t.Fatalf("models differ (first: opm, second: airlock):\n%s", d)
			}
			if len(want.Packages)+len(want.Bundles)+len(want.Others) == 0 {
				t.Fatalf("empty catalog: the comparison compared nothing")
			}
		})
	}
}

// TestChannelHeads compares airlock's channel head (fbc.NewGraph(ch).Head())
// with opm's model.Channel.Head() for every channel of every catalog opm can
// convert to its model, and, for every channel of every loadable catalog, the
// head computed by opm on the channel alone (so that channels of invalid
// catalogs, with several heads or none, are compared too, error text included).
func TestChannelHeads(t *testing.T) {
	ctx := context.Background()
	total := 0
	for _, src := range allSources(t) {
		t.Run(src.Name, func(t *testing.T) {
			cfg, err := opmLoad(ctx, src.Dir)
			if err != nil {
				t.Skipf("opm cannot load it: %v", err)
			}
			ours, err := fbc.LoadDir(ctx, src.Dir, fbc.LoadOptions{ElideHeavy: true})
			if err != nil {
				t.Fatalf("airlock cannot load what opm loads: %v", err)
			}
			ourChans := map[[2]string]*fbc.Channel{}
			for _, p := range ours.Packages {
				for _, ch := range p.Channels {
					k := [2]string{p.Name, ch.Name}
					if _, dup := ourChans[k]; !dup {
						ourChans[k] = ch
					}
				}
			}
			seen := map[[2]string]bool{}
			for _, ch := range cfg.Channels {
				k := [2]string{ch.Package, ch.Name}
				if seen[k] {
					continue
				}
				seen[k] = true
				oc := ourChans[k]
				if oc == nil {
					t.Errorf("channel %s/%s: missing from airlock's model", k[0], k[1])
					continue
				}
				wantHead, wantErr := opmChannelHead(ch)
				gotHead, gotErr := fbc.NewGraph(oc).Head()
				total++
				if errString(wantErr) != errString(gotErr) || wantHead != gotHead {
					t.Errorf("channel %s/%s: opm head %q (%v), airlock head %q (%v)", k[0], k[1], wantHead, wantErr, gotHead, gotErr)
				}
			}

			// On a valid catalog, also through opm's full model.
			m, err := declcfg.ConvertToModel(*cfg)
			if err != nil {
				return
			}
			for _, p := range m {
				for _, ch := range p.Channels {
					oc := ourChans[[2]string{p.Name, ch.Name}]
					if oc == nil {
						t.Errorf("channel %s/%s of opm's model: missing from airlock's model", p.Name, ch.Name)
						continue
					}
					h, err := ch.Head()
					if err != nil {
						t.Errorf("channel %s/%s: opm's model has no head in a valid catalog: %v", p.Name, ch.Name, err)
						continue
					}
					got, err := fbc.NewGraph(oc).Head()
					if err != nil || got != h.Name {
						t.Errorf("channel %s/%s: opm model head %q, airlock head %q (%v)", p.Name, ch.Name, h.Name, got, err)
					}
				}
			}
		})
	}
	t.Logf("compared the heads of %d channels", total)
}

// opmChannelHead builds opm's model.Channel for one declcfg channel, as
// ConvertToModel does (entries by name; a duplicate entry, which the conversion
// refuses, keeps the last), and asks it for its head.
func opmChannelHead(ch declcfg.Channel) (string, error) {
	mc := model.Channel{Name: ch.Name, Bundles: map[string]*model.Bundle{}}
	for _, e := range ch.Entries {
		mc.Bundles[e.Name] = &model.Bundle{Name: e.Name, Replaces: e.Replaces, Skips: e.Skips, SkipRange: e.SkipRange}
	}
	h, err := mc.Head()
	if err != nil {
		return "", err
	}
	return h.Name, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
