package pipeline

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/release/graph"
	"github.com/airlock-mirror/airlock/release/payload"
	relsig "github.com/airlock-mirror/airlock/release/signature"
	"github.com/airlock-mirror/airlock/workspace"
)

// releaseKind is the kind of a release's images in the plan: the payload and
// its components (their mirror sets are idms-release-N).
const releaseKind mirror.ImageKind = "release"

// Destinations of a release's images, as oc-mirror names them: the payload
// at releasePayloadRepo:<version>-<arch>, each component at
// releaseComponentRepo:<version>-<arch>-<name>.
const (
	releasePayloadRepo   = "openshift/release-images"
	releaseComponentRepo = "openshift/release"
	// kubeVirtName is the KubeVirt container image's component name.
	kubeVirtName = "kube-virt-container"
)

// Extras of the release source: what the far side needs besides the images.
const (
	releasesExtra   = "releases.json"
	graphsExtra     = "graphs/"
	signaturesExtra = "signatures/"
)

// releaseSource is mirror.platform: OpenShift release payloads named directly
// (release:) or chosen from update channels (release/graph), each payload's
// signatures verified (release/signature) before anything of it is planned,
// the payload and every component it lists (release/payload) requested by
// digest. Its origins are "platform:<version>/<arch>".
type releaseSource struct {
	r *run
	// releases are the releases selected or loaded, by origin.
	releases map[string]*chosenRelease
	// risks are the conditional updates on the chosen path.
	risks []graph.Risk
	// sigs are the verified signatures of the payloads, by digest.
	sigs map[digest.Digest][][]byte
	// keyring is the release keys, read once.
	keyring *relsig.Keyring
	// probed are the graphs and the graph-data tarball Preflight read, kept
	// for Select.
	probed probed
}

// chosenRelease is one release payload the run mirrors (releases.json).
type chosenRelease struct {
	// Ref is the payload as the configuration (release:) or the graph named it.
	Ref     string `json:"ref"`
	Version string `json:"version"`
	// Arch is amd64, arm64, ppc64le, s390x or multi.
	Arch    string `json:"arch"`
	Channel string `json:"channel,omitempty"`
	// Digest is the payload's digest; Repo its repository (the signed identity's).
	Digest digest.Digest `json:"digest"`
	Repo   string        `json:"repo"`
	// Components are the payload's images by name (the KubeVirt image too
	// when asked for).
	Components []payload.Component `json:"components"`
	// Signatures are the payload's signatures (the number carried).
	Signatures int `json:"signatures"`

	// read is the payload as read (not recorded).
	read *payload.Payload
	// layout is the OCI layout in the workspace the payload image was read
	// into (not recorded): the run copies its blobs from there.
	layout string
}

// Origin is the origin of the release's images in the plan.
func (c *chosenRelease) Origin() string { return releaseOrigin(c.Version, c.Arch) }

func releaseOrigin(version, arch string) string { return "platform:" + version + "/" + arch }

// Tag is the payload's destination tag, "<version>-<arch>" with the arch as
// release tags write it (x86_64, aarch64, …).
func (c *chosenRelease) Tag() string {
	a, ok := payload.ArchName(c.Arch)
	if !ok {
		a = c.Arch
	}
	return c.Version + "-" + a
}

// PayloadRef is the payload by digest.
func (c *chosenRelease) PayloadRef() string { return c.Repo + "@" + c.Digest.String() }

func (s *releaseSource) Name() string { return "platform" }

func (s *releaseSource) Owns(origin string) bool { return strings.HasPrefix(origin, "platform:") }

// platform is the configuration's platform stanza, nil when it selects nothing.
func (s *releaseSource) platform() *imageset.Platform {
	p := s.r.cfg.Mirror.Platform
	if p == nil || (p.Release == "" && len(p.Channels) == 0) {
		return nil
	}
	return p
}

// requests are the images of the releases: the payload and each component,
// by digest, at their oc-mirror destinations.
func (s *releaseSource) requests() ([]mirror.ImageRequest, map[string][]workspace.Want) {
	var out []mirror.ImageRequest
	wants := map[string][]workspace.Want{}
	var platforms []string
	if p := s.r.cfg.Mirror.Platform; p != nil {
		platforms = imageset.PlatformList(p.Platforms)
	}
	for _, c := range s.sorted() {
		var plats []string
		if c.Arch == graph.MultiArch {
			plats = platforms
		}
		w := workspace.Want{Kind: workspace.WantRelease, Version: c.Version, Arch: c.Arch, Image: c.Ref}
		if c.Channel != "" {
			w.Channels = []string{c.Channel}
		}
		out = append(out, mirror.ImageRequest{Name: c.PayloadRef(), Kind: releaseKind, Origin: c.Origin(), TargetRepo: releasePayloadRepo, TargetTag: c.Tag(), Platforms: plats})
		wants[c.PayloadRef()] = append(wants[c.PayloadRef()], w)
		for _, comp := range c.Components {
			out = append(out, mirror.ImageRequest{Name: comp.Image, Kind: releaseKind, Origin: c.Origin(), TargetRepo: releaseComponentRepo, TargetTag: c.Tag() + "-" + comp.Name, Platforms: plats})
			wants[comp.Image] = append(wants[comp.Image], w)
		}
	}
	return out, wants
}

// sorted are the releases by architecture, then version.
func (s *releaseSource) sorted() []*chosenRelease {
	var out []*chosenRelease
	for _, c := range s.releases {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Arch != out[j].Arch {
			return out[i].Arch < out[j].Arch
		}
		return versionLess(out[i].Version, out[j].Version)
	})
	return out
}

// releasesJSON is releases.json: the releases the far side may load.
func (s *releaseSource) releasesJSON() ([]byte, error) {
	return json.MarshalIndent(s.sorted(), "", "  ")
}

// Wants: a release's images are wanted by the release.
func (s *releaseSource) Wants(im mirror.PlanImage, origin string) []workspace.Want {
	if origin == graphOrigin {
		return []workspace.Want{graphWant()}
	}
	if c, ok := s.releases[origin]; ok {
		w := workspace.Want{Kind: workspace.WantRelease, Version: c.Version, Arch: c.Arch, Image: c.Ref}
		if c.Channel != "" {
			w.Channels = []string{c.Channel}
		}
		return []workspace.Want{w}
	}
	version, arch, _ := strings.Cut(strings.TrimPrefix(origin, "platform:"), "/")
	return []workspace.Want{{Kind: workspace.WantRelease, Version: version, Arch: arch}}
}

// Pin pins a payload named directly (release:) to the digest it resolved to;
// channels stay as written (the update graph decides again).
func (s *releaseSource) Pin(_ *mirror.Plan, pins *imageset.Pins) {
	p := s.platform()
	if p == nil || p.Release == "" {
		return
	}
	for _, c := range s.releases {
		if c.Ref == p.Release {
			if pins.Releases == nil {
				pins.Releases = map[string]string{}
			}
			pins.Releases[p.Release] = c.Digest.String()
		}
	}
}

// Deletes: delete.platform names a release by its payload (release:, the
// reference as mirrored or by digest) or by channel: a release of one of the
// stanza's architectures recorded for a listed channel, within the channel's
// minVersion and maxVersion (a bound left out is open: a channel without
// bounds names every release recorded for it). The graph-data image, a
// kind of its own, is named only by graph: true: deleting releases keeps it.
func (s *releaseSource) Deletes(cfg *imageset.DeleteImageSetConfiguration, w workspace.Want) (bool, bool) {
	if w.Kind != workspace.WantRelease && w.Kind != workspace.WantGraphImage {
		return false, false
	}
	p := cfg.Delete.Platform
	if p == nil {
		return false, true
	}
	if isGraphWant(w) {
		return p.Graph, true
	}
	if p.Release != "" {
		return p.Release == w.Image || sameDigest(p.Release, w.Image), true
	}
	if !slices.Contains(graph.Archs(p), w.Arch) {
		return false, true
	}
	for _, ch := range p.Channels {
		if len(w.Channels) > 0 && !slices.Contains(w.Channels, ch.Name) {
			continue
		}
		if ch.MinVersion != "" && versionLess(w.Version, ch.MinVersion) {
			continue
		}
		if ch.MaxVersion != "" && versionLess(ch.MaxVersion, w.Version) {
			continue
		}
		return true, true
	}
	return false, true
}

// sameDigest reports whether a and b are references with the same digest.
func sameDigest(a, b string) bool {
	_, da, ok1 := strings.Cut(a, "@")
	_, db, ok2 := strings.Cut(b, "@")
	return ok1 && ok2 && da == db
}

// versionLess compares release versions as semver (a version that is not
// semver sorts by its text).
func versionLess(a, b string) bool {
	return compareVersions(a, b) < 0
}

// summary is a line per release and one per risk on the chosen path.
func (s *releaseSource) summary() []string {
	var out []string
	for _, c := range s.sorted() {
		from := ""
		if c.Channel != "" {
			from = " from " + c.Channel
		}
		verified := fmt.Sprintf("%d signature(s) verified", c.Signatures)
		if s.r.opts.Releases.IgnoreSignatures {
			verified = "signatures NOT verified (--ignore-release-signature)"
		}
		out = append(out, fmt.Sprintf("release:   %s (%s)%s: payload %s, %d components, %s", c.Version, c.Arch, from, c.Digest, len(c.Components), verified))
	}
	for _, rk := range s.risks {
		out = append(out, fmt.Sprintf("risk:      %s -> %s: %s (%s)", rk.From, rk.To, rk.Name, rk.URL))
	}
	return out
}
