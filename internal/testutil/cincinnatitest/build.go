// Package cincinnatitest serves OpenShift update graphs (the Cincinnati
// protocol) on 127.0.0.1 for tests: graphs built from a subset of
// openshift/cincinnati-graph-data (real channel membership and real risks,
// synthetic edges and payload digests), and oc-mirror's own e2e graph
// fixtures. See testdata/SOURCES.md.
package cincinnatitest

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"text/template"

	"github.com/blang/semver/v4"
	"sigs.k8s.io/yaml"
)

//go:embed testdata
var data embed.FS

// Channels are the channels of the graph-data subset.
var Channels = []string{"stable-4.6", "stable-4.7", "stable-4.12", "eus-4.14", "stable-4.14", "stable-4.15", "eus-4.16",
	"stable-4.16", "stable-4.17", "stable-4.18", "fast-4.18", "stable-4.19", "stable-4.20", "eus-4.20"}

// Archs are the architectures the server answers for.
var Archs = []string{"amd64", "arm64", "ppc64le", "s390x", "multi"}

// Payload is the synthetic pull spec of version for arch: the real release
// repository, a digest made from the version and the architecture.
func Payload(version, arch string) string {
	sum := sha256.Sum256([]byte(version + "-" + arch))
	return "quay.io/openshift-release-dev/ocp-release@sha256:" + hex.EncodeToString(sum[:])
}

type channelFile struct {
	Name     string   `json:"name"`
	Versions []string `json:"versions"`
}

type blockedEdge struct {
	To            string            `json:"to"`
	From          string            `json:"from"`
	URL           string            `json:"url"`
	Name          string            `json:"name"`
	Message       string            `json:"message"`
	MatchingRules []json.RawMessage `json:"matchingRules"`
}

// Same shapes as the protocol (kept apart from release/graph's so that the
// server does not test the parser with itself).
type node struct {
	Version  string            `json:"version"`
	Payload  string            `json:"payload"`
	Metadata map[string]string `json:"metadata"`
}

type edgeRef struct {
	From string `json:"from"`
	To   string `json:"to"`
}

type risk struct {
	URL           string            `json:"url"`
	Name          string            `json:"name"`
	Message       string            `json:"message"`
	MatchingRules []json.RawMessage `json:"matchingRules"`
}

type conditionalEdge struct {
	Edges []edgeRef `json:"edges"`
	Risks []risk    `json:"risks"`
}

type graphJSON struct {
	Nodes            []node            `json:"nodes"`
	Edges            [][2]int          `json:"edges"`
	ConditionalEdges []conditionalEdge `json:"conditionalEdges"`
}

// Edge synthesis (the graph-data repository holds channel membership and
// risks; the edges themselves come from the payloads' metadata, which it
// does not hold): within a minor version each release updates to the next
// sameMinorHops releases of that minor in the channel; a release X.Y+1.Z is
// reached from the X.Y.z with |z-Z| <= crossMinorBand, and the newest X.Y+1
// release of the channel from every X.Y release.
const (
	sameMinorHops  = 3
	crossMinorBand = 10
)

// Build returns the Cincinnati JSON of channel for arch, built from the
// graph-data subset: the channel's versions as nodes (payloads from Payload,
// channel membership in metadata), synthetic edges, and the blocked edges
// into those versions: as conditional edges with their risks when they have
// matching rules, removed when they have none.
func Build(channel, arch string) ([]byte, error) {
	key := channel + "/" + arch
	if b, ok := built.Load(key); ok {
		return slices.Clone(b.([]byte)), nil
	}
	b, err := build(channel, arch)
	if err != nil {
		return nil, err
	}
	built.Store(key, b)
	return slices.Clone(b), nil
}

// built caches Build's graphs (deterministic) for the tests of one process.
var built sync.Map

var (
	loadChannels = sync.OnceValues(readChannels)
	loadBlocked  = sync.OnceValues(readBlocked)
)

func build(channel, arch string) ([]byte, error) {
	chans, err := loadChannels()
	if err != nil {
		return nil, err
	}
	cf, ok := chans[channel]
	if !ok {
		return json.Marshal(graphJSON{Nodes: []node{}, Edges: [][2]int{}, ConditionalEdges: []conditionalEdge{}})
	}
	vers := make([]semver.Version, 0, len(cf.Versions))
	for _, v := range cf.Versions {
		pv, err := semver.Parse(v)
		if err != nil {
			return nil, fmt.Errorf("channel %s: %v", channel, err)
		}
		vers = append(vers, pv)
	}
	slices.SortFunc(vers, func(a, b semver.Version) int { return a.Compare(b) })
	g := graphJSON{Nodes: make([]node, len(vers)), Edges: [][2]int{}, ConditionalEdges: []conditionalEdge{}}
	for i, v := range vers {
		var in []string
		for _, name := range Channels {
			if slices.Contains(chans[name].Versions, v.String()) {
				in = append(in, name)
			}
		}
		g.Nodes[i] = node{Version: v.String(), Payload: Payload(v.String(), arch), Metadata: map[string]string{
			"io.openshift.upgrades.graph.release.channels":    strings.Join(in, ","),
			"io.openshift.upgrades.graph.release.manifestref": strings.TrimPrefix(Payload(v.String(), arch), "quay.io/openshift-release-dev/ocp-release@"),
		}}
	}
	blocked, err := loadBlocked()
	if err != nil {
		return nil, err
	}
	cond := map[string]*conditionalEdge{} // by risk names
	for i, from := range vers {
		for j, to := range vers {
			if !synthetic(vers, i, j) {
				continue
			}
			var risks []risk
			removed := false
			for _, b := range blocked {
				// from is matched against the release name, version+arch
				// (graph-data's README), or the bare version.
				if b.To != to.String() || !b.from.MatchString(from.String()) && !b.from.MatchString(from.String()+"+"+arch) {
					continue
				}
				if len(b.MatchingRules) == 0 {
					removed = true
					break
				}
				risks = append(risks, risk{URL: b.URL, Name: b.Name, Message: b.Message, MatchingRules: b.MatchingRules})
			}
			switch {
			case removed:
			case len(risks) == 0:
				g.Edges = append(g.Edges, [2]int{i, j})
			default:
				slices.SortFunc(risks, func(a, b risk) int { return strings.Compare(a.Name, b.Name) })
				var names []string
				for _, r := range risks {
					names = append(names, r.Name)
				}
				key := strings.Join(names, ",")
				ce := cond[key]
				if ce == nil {
					ce = &conditionalEdge{Risks: risks}
					cond[key] = ce
				}
				ce.Edges = append(ce.Edges, edgeRef{From: from.String(), To: to.String()})
			}
		}
	}
	keys := make([]string, 0, len(cond))
	for k := range cond {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		g.ConditionalEdges = append(g.ConditionalEdges, *cond[k])
	}
	return json.Marshal(g)
}

// synthetic reports whether the synthetic graph has an update vers[i] -> vers[j].
func synthetic(vers []semver.Version, i, j int) bool {
	from, to := vers[i], vers[j]
	if !from.LT(to) || from.Major != to.Major {
		return false
	}
	switch to.Minor {
	case from.Minor:
		hops := 0
		for k := i + 1; k <= j; k++ {
			if vers[k].Minor == from.Minor {
				hops++
			}
		}
		return hops <= sameMinorHops
	case from.Minor + 1:
		newest := j == len(vers)-1 || vers[j+1].Minor != to.Minor
		return newest || max(from.Patch, to.Patch)-min(from.Patch, to.Patch) <= crossMinorBand
	}
	return false
}

func readChannels() (map[string]channelFile, error) {
	out := map[string]channelFile{}
	for _, name := range Channels {
		b, err := data.ReadFile(path.Join("testdata/cincinnati-graph-data/channels", name+".yaml"))
		if err != nil {
			return nil, err
		}
		var cf channelFile
		if err := yaml.Unmarshal(b, &cf); err != nil {
			return nil, fmt.Errorf("channel %s: %v", name, err)
		}
		out[name] = cf
	}
	return out, nil
}

type blockedRule struct {
	blockedEdge
	from *regexp.Regexp
}

func readBlocked() ([]blockedRule, error) {
	dir := "testdata/cincinnati-graph-data/blocked-edges"
	entries, err := fs.ReadDir(data, dir)
	if err != nil {
		return nil, err
	}
	var out []blockedRule
	for _, e := range entries {
		b, err := data.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		var be blockedEdge
		if err := yaml.Unmarshal(b, &be); err != nil {
			return nil, fmt.Errorf("%s: %v", e.Name(), err)
		}
		re, err := regexp.Compile("^(" + be.From + ")$")
		if err != nil {
			return nil, fmt.Errorf("%s: from: %v", e.Name(), err)
		}
		out = append(out, blockedRule{blockedEdge: be, from: re})
	}
	slices.SortFunc(out, func(a, b blockedRule) int { return cmp.Compare(a.To+a.Name, b.To+b.Name) })
	return out, nil
}

// OCMirrorFixture renders one of oc-mirror's e2e graph templates
// (cincinnati_stable-4.0.json with registry as the payloads' host,
// cincinnati_stable-4.15.json with payload as its 4.15.0 payload).
func OCMirrorFixture(channel, registry, payload string) ([]byte, error) {
	b, err := data.ReadFile("testdata/oc-mirror/cincinnati_" + channel + ".json")
	if err != nil {
		return nil, err
	}
	t, err := template.New(channel).Parse(string(b))
	if err != nil {
		return nil, err
	}
	var arg any = registry
	if channel == "stable-4.15" {
		arg = []string{payload}
	}
	var out bytes.Buffer
	if err := t.Execute(&out, arg); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
