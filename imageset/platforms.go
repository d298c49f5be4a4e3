package imageset

import (
	"strings"
)

// Platform subsets: operators[].platforms and additionalImages[].platforms,
// oc-mirror v2's shape (a list of {os, architecture}). An image that is an
// index is mirrored with only the children of the listed platforms (a sparse
// index keeping its digest); a single-platform image is mirrored as it is.

// DefaultPlatformOS is the os of a platforms entry that names only an
// architecture.
const DefaultPlatformOS = "linux"

// knownOS and knownArch are the values the OCI image index allows (Go's GOOS
// and GOARCH); platformAliases are other tools' names for them.
var (
	knownOS = []string{"aix", "android", "darwin", "dragonfly", "freebsd", "illumos", "ios", "js", "linux",
		"netbsd", "openbsd", "plan9", "solaris", "wasip1", "windows"}
	knownArch = []string{"386", "amd64", "arm", "arm64", "loong64", "mips", "mips64", "mips64le", "mipsle",
		"ppc64", "ppc64le", "riscv64", "s390x", "wasm"}
	platformAliases = map[string]string{
		"x86_64": "amd64", "x86-64": "amd64", "x64": "amd64", "aarch64": "arm64", "arm64v8": "arm64",
		"ppc64el": "ppc64le", "i386": "386", "i686": "386", "x86": "386", "armhf": "arm", "armv7": "arm",
		"armv7l": "arm", "multi": "", "all": "",
	}
)

// String is the entry as "os/architecture", the os defaulting to linux.
func (p PlatformSpec) String() string {
	os := p.OS
	if os == "" {
		os = DefaultPlatformOS
	}
	return os + "/" + p.Architecture
}

// PlatformList is specs as "os/architecture" strings, in order; nil (every
// platform) for an empty list.
func PlatformList(specs []PlatformSpec) []string {
	var out []string
	for _, p := range specs {
		out = append(out, p.String())
	}
	return out
}

// platforms checks a platforms list at path p (set tells whether the key was
// written, so that an empty list is told from none).
func (v *validator) platforms(p string, specs []PlatformSpec, set bool) {
	if len(specs) == 0 {
		if set {
			v.report(p, ErrInvalid, "platforms is empty: list at least one platform ({os: linux, architecture: amd64}), or remove platforms to mirror every platform")
		}
		return
	}
	seen := map[string]int{}
	for i, ps := range specs {
		e := indexPath(p, i)
		if ps.OS != "" && !contains(knownOS, ps.OS) {
			v.report(e+".os", ErrInvalid, "unknown os %s%s; use one of %s (or leave os out for linux)", quote(ps.OS), suggest(ps.OS, knownOS, nil), strings.Join(knownOS, ", "))
			continue
		}
		switch {
		case ps.Architecture == "":
			v.report(e, ErrInvalid, "architecture is missing; set it to one of %s", strings.Join(knownArch, ", "))
			continue
		case !contains(knownArch, ps.Architecture):
			hint := suggest(ps.Architecture, knownArch, platformAliases)
			if alias, ok := platformAliases[strings.ToLower(ps.Architecture)]; ok && alias == "" {
				hint = " (for every platform, remove platforms)"
			}
			v.report(e+".architecture", ErrInvalid, "unknown architecture %s%s; use one of %s", quote(ps.Architecture), hint, strings.Join(knownArch, ", "))
			continue
		}
		if j, dup := seen[ps.String()]; dup {
			v.report(e, ErrInvalid, "platform %s is listed twice (also %s, line %d); remove one", ps.String(), indexPath(p, j), v.at(indexPath(p, j)).line)
			continue
		}
		seen[ps.String()] = i
	}
}

// suggest is " (did you mean X?)" for a near or aliased value, else "".
func suggest(s string, valid []string, aliases map[string]string) string {
	if a := aliases[strings.ToLower(s)]; a != "" {
		return " (did you mean " + a + "?)"
	}
	if n := nearest(s, valid); n != "" {
		return " (did you mean " + n + "?)"
	}
	return ""
}
