package conformance

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/imageset"
)

// oMutant is a deliberately broken variant of the product filter. run returns
// what the broken filter returns on (c, op), or applicable false when the pair
// does not exercise the bug or the model would not be exact on it (then the
// pair is not counted for this mutant).
type oMutant struct {
	name, bug, model string
	run              func(in *mutantInput, op imageset.Operator) (res *oResult, ref *oRefusal, applicable bool)
}

// mutantInput is one catalog with the catalog transforms of the mutants, made once.
type mutantInput struct {
	oracleInput
	noGVKRequired, noPackageRequired, firstAlternative *fbc.Catalog
}

func newMutantInput(in oracleInput) *mutantInput {
	drop := func(json.RawMessage) (json.RawMessage, bool) { return nil, false }
	return &mutantInput{
		oracleInput:       in,
		noGVKRequired:     editRequirements(in.cat, "olm.gvk.required", drop),
		noPackageRequired: editRequirements(in.cat, "olm.package.required", drop),
		firstAlternative:  editRequirements(in.cat, "olm.package.required", firstAlternative),
	}
}

// onOutput runs the product and, when it keeps something, has edit change the
// kept entries; the changed catalog is validated as Filter validates its own
// output. applicable is what edit reports (whether it changed anything).
func onOutput(in *mutantInput, op imageset.Operator, edit func(ks keepSets) bool) (*oResult, *oRefusal, bool) {
	out, r := productOutput(in.cat, op)
	if r != nil {
		return nil, r, false
	}
	ks := keepSetsOf(out)
	if !edit(ks) {
		return nil, nil, false
	}
	res, ref := rebuild(in.cat, out, ks)
	return res, ref, true
}

// onConfig runs the product on a changed configuration.
func onConfig(in *mutantInput, op imageset.Operator, edit func(op *imageset.Operator) bool) (*oResult, *oRefusal, bool) {
	op = cloneOperator(op)
	if !edit(&op) {
		return nil, nil, false
	}
	res, ref := productSelect(in.cat, op)
	return res, ref, true
}

func cloneOperator(op imageset.Operator) imageset.Operator {
	op.Packages = append([]imageset.IncludePackage(nil), op.Packages...)
	for i := range op.Packages {
		op.Packages[i].Channels = append([]imageset.IncludeChannel(nil), op.Packages[i].Channels...)
	}
	return op
}

// exclusive is the off-by-one mutant of one bound: every range of op with that
// bound, rewritten to the inclusive range the exclusive bound selects.
func exclusive(upper bool) func(in *mutantInput, op imageset.Operator) (*oResult, *oRefusal, bool) {
	return func(in *mutantInput, op imageset.Operator) (*oResult, *oRefusal, bool) {
		if validateConfig(op) != nil {
			return nil, nil, false
		}
		return onConfig(in, op, func(op *imageset.Operator) bool {
			changed, exact := false, true
			for i := range op.Packages {
				ip := &op.Packages[i]
				p := in.src.pkgs[ip.Name]
				if p == nil {
					continue
				}
				vs := versionsOf(p)
				rewrite := func(ib *imageset.IncludeBundle) {
					nb, ok := exclusiveBound(*ib, vs, upper)
					changed = changed || nb != *ib
					exact = exact && ok
					*ib = nb
				}
				rewrite(&ip.IncludeBundle)
				for j := range ip.Channels {
					rewrite(&ip.Channels[j].IncludeBundle)
				}
			}
			return changed && exact
		})
	}
}

// oracleMutants is the table of docs/conformance.md.
var oracleMutants = []oMutant{
	{"max-bound-exclusive", "maxVersion compared with < instead of <=",
		"configuration: each maxVersion becomes the greatest version of the package below it (a range no version is in when none is)",
		exclusive(true)},
	{"min-bound-exclusive", "minVersion compared with > instead of >=",
		"configuration: each minVersion becomes the least version of the package above it",
		exclusive(false)},
	{"prerelease-out-of-range", "a pre-release is never in a range (Masterminds semantics, oc-mirror's difference)",
		"catalog: the pre-release bundles of ranged packages get unique versions outside every range of the configuration (skipDependencies pairs only: versions also drive dependencies)",
		prereleaseMutant},
	{"dependencies-not-followed", "olm.package.required / olm.gvk.required not resolved (oc-mirror v2)",
		"configuration: skipDependencies: true", func(in *mutantInput, op imageset.Operator) (*oResult, *oRefusal, bool) {
			return onConfig(in, op, func(op *imageset.Operator) bool {
				was := op.SkipDependencies
				op.SkipDependencies = true
				return !was
			})
		}},
	{"gvk-required-ignored", "olm.gvk.required not read", "catalog: olm.gvk.required properties removed",
		func(in *mutantInput, op imageset.Operator) (*oResult, *oRefusal, bool) {
			res, ref := productSelect(in.noGVKRequired, op)
			return res, ref, !op.SkipDependencies
		}},
	{"package-required-ignored", "olm.package.required not read", "catalog: olm.package.required properties removed",
		func(in *mutantInput, op imageset.Operator) (*oResult, *oRefusal, bool) {
			res, ref := productSelect(in.noPackageRequired, op)
			return res, ref, !op.SkipDependencies
		}},
	{"or-range-first-alternative", "a versionRange with || reads only its first alternative",
		"catalog: every versionRange cut before its first ||",
		func(in *mutantInput, op imageset.Operator) (*oResult, *oRefusal, bool) {
			res, ref := productSelect(in.firstAlternative, op)
			return res, ref, !op.SkipDependencies
		}},
	{"default-channel-ignored", "packages[].defaultChannel ignored", "configuration: defaultChannel removed",
		func(in *mutantInput, op imageset.Operator) (*oResult, *oRefusal, bool) {
			return onConfig(in, op, func(op *imageset.Operator) bool {
				changed := false
				for i := range op.Packages {
					changed = changed || op.Packages[i].DefaultChannel != ""
					op.Packages[i].DefaultChannel = ""
				}
				return changed
			})
		}},
	{"default-channel-checks-skipped", "no check that the default channel is selected and not emptied",
		"output: where Filter refuses for the default channel, the broken filter writes a package whose default channel is not kept, which its final validation refuses",
		func(in *mutantInput, op imageset.Operator) (*oResult, *oRefusal, bool) {
			_, r := productOutput(in.cat, op)
			if r == nil || !strings.HasPrefix(r.class, "default-channel-") {
				return nil, nil, false
			}
			return nil, &oRefusal{class: "invalid-output", msg: "default channel not kept"}, true
		}},
	{"continuity-dropped", "a range keeps only its in-range entries (no continuity; opm #1231's range mode)",
		"output: out-of-range entries of ranged channels removed, then validated (skipDependencies pairs only)",
		func(in *mutantInput, op imageset.Operator) (*oResult, *oRefusal, bool) {
			if !op.SkipDependencies {
				return nil, nil, false
			}
			return onOutput(in, op, func(ks keepSets) bool {
				changed := false
				rangedChannels(in.src, op, func(p *oPkg, ch *oChan, r oRange) {
					for n := range ks[p.name][ch.name] {
						if !r.has(p.bundles[n]) {
							delete(ks[p.name][ch.name], n)
							changed = true
						}
					}
				})
				return changed
			})
		}},
	{"tail-kept", "the first chain node whose count is 0 is kept (off by one at the bottom of the range)",
		"output: in ranged channels, the chain node below the lowest kept one added (skipDependencies pairs only)",
		func(in *mutantInput, op imageset.Operator) (*oResult, *oRefusal, bool) {
			if !op.SkipDependencies {
				return nil, nil, false
			}
			return onOutput(in, op, func(ks keepSets) bool {
				changed := false
				rangedChannels(in.src, op, func(p *oPkg, ch *oChan, _ oRange) {
					keep := ks[p.name][ch.name]
					chain, _ := oChain(ch, oHead(ch))
					low := -1
					for i, n := range chain {
						if keep[n] {
							low = i
						}
					}
					if low >= 0 && low+1 < len(chain) {
						keep[chain[low+1]] = true
						changed = true
					}
				})
				return changed
			})
		}},
	{"new-head-at-top", "the new head is the channel head (the highest chain node with the maximal count, not the lowest)",
		"output: in ranged channels, the chain nodes above the highest kept one added (skipDependencies pairs only)",
		func(in *mutantInput, op imageset.Operator) (*oResult, *oRefusal, bool) {
			if !op.SkipDependencies {
				return nil, nil, false
			}
			return onOutput(in, op, func(ks keepSets) bool {
				changed := false
				rangedChannels(in.src, op, func(p *oPkg, ch *oChan, _ oRange) {
					keep := ks[p.name][ch.name]
					chain, _ := oChain(ch, oHead(ch))
					for _, n := range chain {
						if keep == nil || keep[n] {
							break
						}
						keep[n] = true
						changed = true
					}
				})
				return changed
			})
		}},
	{"head-by-highest-version", "heads only keeps the highest version instead of the graph's head",
		"output: each heads-only channel holds its highest-version entry (skipDependencies pairs only)",
		func(in *mutantInput, op imageset.Operator) (*oResult, *oRefusal, bool) {
			if !op.SkipDependencies {
				return nil, nil, false
			}
			return onOutput(in, op, func(ks keepSets) bool {
				changed := false
				headOnlyChannels(in.src, op, func(p *oPkg, ch *oChan) {
					var best *oBundle
					for _, n := range ch.order {
						if b := p.bundles[n]; b != nil && b.verOK && (best == nil || b.version.Compare(best.version) > 0) {
							best = b
						}
					}
					if best != nil && ks[p.name][ch.name] != nil && !ks[p.name][ch.name][best.name] {
						ks[p.name][ch.name] = map[string]bool{best.name: true}
						changed = true
					}
				})
				return changed
			})
		}},
	{"bundles-without-path", "bundles keeps only the named bundles, not their path to the head (oc-mirror 4.16-4.17)",
		"output: channels of packages with bundles keep only the named ones, then validated (skipDependencies pairs only)",
		func(in *mutantInput, op imageset.Operator) (*oResult, *oRefusal, bool) {
			if !op.SkipDependencies {
				return nil, nil, false
			}
			return onOutput(in, op, func(ks keepSets) bool {
				changed := false
				for _, ip := range op.Packages {
					named := map[string]bool{}
					for _, sb := range ip.SelectedBundles {
						named[sb.Name] = true
					}
					for cn, keep := range ks[ip.Name] {
						for n := range keep {
							if len(named) > 0 && !named[n] {
								delete(keep, n)
								changed = true
							}
						}
						if len(keep) == 0 {
							delete(ks[ip.Name], cn)
						}
					}
				}
				return changed
			})
		}},
}

// prereleaseMutant: the pre-release bundles of the packages with a range get a
// version outside every range of the configuration.
func prereleaseMutant(in *mutantInput, op imageset.Operator) (*oResult, *oRefusal, bool) {
	rs := ranges(op)
	if !op.SkipDependencies || len(rs) == 0 {
		return nil, nil, false
	}
	changed, exact := false, true
	seq := map[string]int{}
	c := withProperties(in.cat, func(pkg string, b *fbc.Bundle, props []fbc.Property) []fbc.Property {
		ob := in.src.pkgs[pkg].bundles[b.Name]
		if len(rs[pkg]) == 0 || ob == nil || !ob.verOK || len(ob.version.Pre) == 0 {
			return props
		}
		for i, p := range props {
			if p.Type != "olm.package" {
				continue
			}
			v := ""
			seq[pkg]++
			for _, cand := range []string{"0.0.0-0.%d", "999999.0.%d"} {
				s := fmt.Sprintf(cand, seq[pkg])
				nb := &oBundle{version: semver.MustParse(s), verOK: true}
				inAny := false
				for _, r := range rs[pkg] {
					inAny = inAny || r.has(nb)
				}
				if !inAny {
					v = s
					break
				}
			}
			if v == "" {
				exact = false
				continue
			}
			val, _ := json.Marshal(map[string]string{"packageName": pkg, "version": v})
			props[i] = fbc.Property{Type: p.Type, Value: val}
			changed = true
		}
		return props
	})
	if !changed || !exact {
		return nil, nil, false
	}
	res, ref := productSelect(c, op)
	return res, ref, true
}

// TestSelectionOracleMutants runs the comparison against each broken variant of
// the product filter on a sample of the pairs (every fifth configuration of
// every catalog, so both with and without dependencies): each must disagree with the oracle on at least one pair.
func TestSelectionOracleMutants(t *testing.T) {
	type tally struct {
		run, caught int
		first       string
	}
	tallies := make([]tally, len(oracleMutants))
	for _, base := range oracleInputs(t) {
		in := newMutantInput(base)
		for i, fc := range oracleConfigs(in.src, in.seed, oracleMaxPkgs) {
			if i%5 != 0 {
				continue
			}
			want, wr := oracleFilter(in.src, fc.op)
			for m, mu := range oracleMutants {
				got, gr, ok := mu.run(in, fc.op)
				if !ok {
					continue
				}
				tallies[m].run++
				if d := compareOutcomes(in.src, want, wr, got, gr); d != "" {
					tallies[m].caught++
					if tallies[m].first == "" {
						tallies[m].first = fmt.Sprintf("%s %s: %s", in.name, fc.name, strings.SplitN(d, "\n", 2)[0])
					}
				}
			}
		}
	}
	for i, mu := range oracleMutants {
		tl := tallies[i]
		t.Logf("| `%s` | %s | %d | %d | %s |", mu.name, mu.bug, tl.run, tl.caught, tl.first)
		if tl.caught == 0 {
			t.Errorf("mutant %s (%s) was not caught on any of %d pairs", mu.name, mu.bug, tl.run)
		}
	}
}
