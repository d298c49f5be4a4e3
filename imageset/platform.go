package imageset

import (
	"reflect"
	"strings"

	"github.com/distribution/reference"

	"github.com/airlock-mirror/airlock/location"
)

// The platform stanza (mirror.platform, delete.platform): OpenShift release
// payloads chosen from update channels, or one payload named directly.

// Release channel types.
const (
	ChannelTypeOCP = "ocp"
	ChannelTypeOKD = "okd"
)

// ReleaseArchitectures are the values platform.architectures takes: the
// architectures OpenShift publishes payloads for, and multi (the
// multi-architecture payloads).
var ReleaseArchitectures = []string{"amd64", "arm64", "ppc64le", "s390x", "multi"}

// releasePlatformArchs are the architectures of a multi payload's children.
var releasePlatformArchs = []string{"amd64", "arm64", "ppc64le", "s390x"}

// releaseExample is an example of platform.release.
const releaseExample = "quay.io/openshift-release-dev/ocp-release:4.16.0-x86_64"

// platform validates a platform stanza at p (mirror.platform or delete.platform).
func (v *validator) platform(p string, pl *Platform) {
	if pl == nil || (reflect.ValueOf(*pl).IsZero() && !v.written(p)) {
		return
	}
	for i, ch := range pl.Channels { // configurations built in code
		if cp := indexPath(p+".channels", i); ch.Line > 0 && !v.written(cp) {
			v.pos[cp] = position{line: ch.Line}
		}
	}
	// A stanza without channels or release selects nothing, as in oc-mirror
	// (whose own tests write architectures alone beside other content).
	v.releaseChannels(p+".channels", pl.Channels)
	archSet := pl.Architectures != nil || v.written(p+".architectures")
	platSet := pl.Platforms != nil || v.written(p+".platforms")
	if archSet && platSet {
		v.report(p+".platforms", ErrInvalid, "platforms and architectures cannot be used together; keep platforms (a sparse multi-architecture payload) or architectures (one payload per architecture), as oc-mirror requires")
	}
	v.releaseArchitectures(p+".architectures", pl.Architectures, archSet)
	v.platforms(p+".platforms", pl.Platforms, platSet)
	for i, ps := range pl.Platforms {
		if ps.Architecture != "" && contains(knownArch, ps.Architecture) && !contains(releasePlatformArchs, ps.Architecture) {
			v.report(indexPath(p+".platforms", i)+".architecture", ErrInvalid, "OpenShift publishes no release for architecture %s; use one of %s", quote(ps.Architecture), strings.Join(releasePlatformArchs, ", "))
		}
		if ps.OS != "" && ps.OS != DefaultPlatformOS {
			v.report(indexPath(p+".platforms", i)+".os", ErrInvalid, "OpenShift releases are built for linux only; set os to linux or leave it out")
		}
	}
	if pl.Release != "" {
		v.releaseImage(p+".release", pl.Release)
		if len(pl.Channels) > 0 {
			v.report(p+".channels", ErrInvalid, "release names one payload and channels choose payloads from update channels; oc-mirror ignores the channels when release is set, so keep one of them")
		}
	}
}

func (v *validator) releaseChannels(p string, chans []ReleaseChannel) {
	seen := map[string]int{}
	for i, ch := range chans {
		cp := indexPath(p, i)
		switch {
		case ch.Name == "":
			v.report(cp+".name", ErrInvalid, "channel name is empty; set it to an update channel such as stable-4.16 (airlock list releases --channels lists them)")
		case strings.ContainsAny(ch.Name, " \t/?&#"):
			v.report(cp+".name", ErrInvalid, "channel name %s is not a channel name; write one such as stable-4.16, eus-4.16 or fast-4.16", quote(ch.Name))
		default:
			if j, dup := seen[ch.Name]; dup {
				v.report(cp+".name", ErrInvalid, "duplicate channel %s: already listed as %s (line %d); merge the two entries", quote(ch.Name), indexPath(p, j), v.at(indexPath(p, j)).line)
			} else {
				seen[ch.Name] = i
			}
		}
		if ch.Type != "" && ch.Type != ChannelTypeOCP && ch.Type != ChannelTypeOKD {
			v.report(cp+".type", ErrInvalid, "unknown channel type %s%s; use ocp (OpenShift, the default) or okd", quote(ch.Type), suggest(ch.Type, []string{ChannelTypeOCP, ChannelTypeOKD}, nil))
		}
		lo, okLo := v.semver(cp+".minVersion", "minVersion", ch.MinVersion)
		hi, okHi := v.semver(cp+".maxVersion", "maxVersion", ch.MaxVersion)
		if okLo && okHi && lo.GT(hi) {
			v.report(cp+".minVersion", ErrInvalid, "minVersion %s is greater than maxVersion %s; swap them (minVersion equal to maxVersion selects exactly one release)", ch.MinVersion, ch.MaxVersion)
		}
	}
}

func (v *validator) releaseArchitectures(p string, archs []string, set bool) {
	if len(archs) == 0 {
		if set {
			v.report(p, ErrInvalid, "architectures is empty; list at least one of %s, or remove architectures for amd64", strings.Join(ReleaseArchitectures, ", "))
		}
		return
	}
	seen := map[string]int{}
	for i, a := range archs {
		e := indexPath(p, i)
		if !contains(ReleaseArchitectures, a) {
			v.report(e, ErrInvalid, "unknown architecture %s%s; use one of %s", quote(a), suggest(a, ReleaseArchitectures, platformAliases), strings.Join(ReleaseArchitectures, ", "))
			continue
		}
		if j, dup := seen[a]; dup {
			v.report(e, ErrInvalid, "architecture %s is listed twice (also %s); remove one", a, indexPath(p, j))
			continue
		}
		seen[a] = i
	}
}

// releaseImage checks platform.release: a registry reference with a tag or a digest.
func (v *validator) releaseImage(p, s string) {
	if v.credentials(p, "release", s) {
		return
	}
	if location.IsLayout(s) {
		v.report(p, ErrInvalid, "release %s: oci:// is not supported for release payloads; use a registry reference such as %s", quote(s), releaseExample)
		return
	}
	ref := location.ImageRef(s)
	if t, _, ok := strings.Cut(ref, "://"); ok {
		v.report(p, ErrInvalid, "release %s uses transport %s://, which is not supported; use a registry reference such as %s", quote(s), t, releaseExample)
		return
	}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		v.report(p, ErrInvalid, "invalid release reference %s: %v; use a reference such as %s", quote(s), err, releaseExample)
		return
	}
	_, tagged := named.(reference.Tagged)
	_, digested := named.(reference.Digested)
	if !tagged && !digested {
		v.report(p, ErrInvalid, "release %s has neither a tag nor a digest; add one, e.g. %s", quote(s), releaseExample)
	}
}
