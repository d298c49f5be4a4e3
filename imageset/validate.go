package imageset

import (
	_ "crypto/sha256" // digest references are validated: go-digest needs the hash linked in
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/airlock-mirror/airlock/internal/redact"
	"github.com/airlock-mirror/airlock/location"
	"github.com/blang/semver/v4"
	"github.com/distribution/reference"
)

// MaxArchiveSizeGiB is the largest archiveSize accepted (1 PiB).
const MaxArchiveSizeGiB = 1 << 20

// Validate checks c the way Load does (everything except YAML syntax and unknown
// fields), for configurations built in code. Positions come from the Line fields;
// an empty Kind or APIVersion is accepted. It returns nil or an Errors value.
func (c *ImageSetConfiguration) Validate() error {
	v := &validator{errorList: &errorList{file: c.Source}, pos: map[string]position{}}
	v.linesFromSpec("mirror", c.Mirror.Operators, c.Mirror.AdditionalImages, c.Mirror.BlockedImages, c.Mirror.Samples)
	v.typeMeta(c.TypeMeta, KindImageSetConfiguration)
	v.isc(c)
	return v.errs.sorted()
}

// Validate checks c the way LoadDelete does, for configurations built in code.
func (c *DeleteImageSetConfiguration) Validate() error {
	v := &validator{errorList: &errorList{file: c.Source}, pos: map[string]position{}}
	v.linesFromSpec("delete", c.Delete.Operators, c.Delete.AdditionalImages, c.Delete.BlockedImages, c.Delete.Samples)
	v.typeMeta(c.TypeMeta, KindDeleteImageSetConfiguration)
	v.disc(c)
	return v.errs.sorted()
}

type validator struct {
	*errorList
	pos map[string]position
}

// at finds the position of path, or of its nearest parent that has one.
func (v *validator) at(path string) position {
	for p := path; ; p = parentPath(p) {
		if pos, ok := v.pos[p]; ok {
			return pos
		}
		if p == "" {
			return position{}
		}
	}
}

// written reports whether the file wrote path (even as an empty value).
func (v *validator) written(path string) bool { _, ok := v.pos[path]; return ok }

// report adds an error unless path (or a parent) already has one from decoding.
func (v *validator) report(path string, cause error, format string, args ...any) {
	if v.covered(path) {
		return
	}
	v.add(v.at(path), path, cause, format, args...)
}

func (v *validator) typeMeta(tm TypeMeta, kind string) {
	if tm.Kind != "" && tm.Kind != kind {
		v.report("kind", ErrInvalid, "expected kind %s, got %s", kind, quote(tm.Kind))
	}
	if tm.APIVersion != "" && tm.APIVersion != APIVersion {
		v.report("apiVersion", ErrInvalid, "unsupported apiVersion %s; use %s", quote(tm.APIVersion), APIVersion)
	}
}

// linesFromSpec fills the position table from Line fields (configurations built in code).
func (v *validator) linesFromSpec(prefix string, ops []Operator, add, blocked []Image, samples []SampleImage) {
	set := func(p string, line int) {
		if line > 0 {
			v.pos[p] = position{line: line}
		}
	}
	for i, o := range ops {
		op := indexPath(prefix+".operators", i)
		set(op, o.Line)
		for j, p := range o.Packages {
			pp := indexPath(op+".packages", j)
			set(pp, p.Line)
			for k, ch := range p.Channels {
				set(indexPath(pp+".channels", k), ch.Line)
			}
		}
	}
	for i, im := range add {
		set(indexPath(prefix+".additionalImages", i), im.Line)
	}
	for i, im := range blocked {
		set(indexPath(prefix+".blockedImages", i), im.Line)
	}
	for i, im := range samples {
		set(indexPath(prefix+".samples", i), im.Line)
	}
}

func (v *validator) isc(c *ImageSetConfiguration) {
	if c.ArchiveSize < 0 {
		v.report("archiveSize", ErrInvalid, "archiveSize must not be negative; give the chunk size in GiB, or 0 for the default of %d GiB", DefaultArchiveSizeGiB)
	} else if c.ArchiveSize > MaxArchiveSizeGiB {
		v.report("archiveSize", ErrInvalid, "archiveSize %d is larger than %d; it is a size in GiB (0 means %d GiB)", c.ArchiveSize, MaxArchiveSizeGiB, DefaultArchiveSizeGiB)
	}
	m := &c.Mirror
	v.spec("mirror", m.Platform, m.Operators, m.AdditionalImages, m.BlockedImages, m.Helm, m.Samples)
}

func (v *validator) disc(c *DeleteImageSetConfiguration) {
	s := &c.Delete
	v.spec("delete", s.Platform, s.Operators, s.AdditionalImages, s.BlockedImages, s.Helm, s.Samples)
}

func (v *validator) spec(prefix string, platform *Platform, ops []Operator, add, blocked []Image, helm *Helm, samples []SampleImage) {
	v.platform(prefix+".platform", platform)
	if helm != nil && !reflect.ValueOf(*helm).IsZero() {
		v.report(prefix+".helm", ErrNotSupported, "not supported yet: airlock does not mirror Helm charts; remove the helm stanza (list the chart images under additionalImages instead)")
	}
	if len(samples) > 0 {
		v.report(prefix+".samples", ErrNotSupported, "not supported yet (oc-mirror does not implement samples either); remove it")
	}
	v.operators(prefix+".operators", ops)
	for i, im := range add {
		v.additionalImage(indexPath(prefix+".additionalImages", i), im)
	}
	for i, im := range blocked {
		p := indexPath(prefix+".blockedImages", i)
		if im.Name == "" {
			v.report(p+".name", ErrInvalid, "blocked image name is empty; set it to a Go regular expression matching the references to skip, e.g. ^quay\\.io/example/")
			continue
		}
		if _, err := regexp.Compile(im.Name); err != nil {
			v.report(p+".name", ErrInvalid, "invalid regular expression %s: %v; blockedImages names are Go regular expressions (escape dots as \\.)", quote(im.Name), strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
	}
}

// catalogKey is the destination identity of a catalog: oc-mirror's unique name, the
// source reference with targetCatalog replacing its path and targetTag its tag.
func catalogKey(o Operator) string {
	if path, ok := location.CutLayout(o.Catalog); ok {
		return location.OCI(path).String() + "\x00" + o.TargetCatalog + "\x00" + o.TargetTag
	}
	named, err := reference.ParseNormalizedNamed(location.ImageRef(o.Catalog))
	if err != nil {
		return o.Catalog + "\x00" + o.TargetCatalog + "\x00" + o.TargetTag
	}
	path := reference.Path(named)
	if o.TargetCatalog != "" {
		path = o.TargetCatalog
	}
	key := reference.Domain(named) + "/" + path
	switch {
	case o.TargetTag != "":
		key += ":" + o.TargetTag
	default:
		if t, ok := named.(reference.Tagged); ok {
			key += ":" + t.Tag()
		}
		if dg, ok := named.(reference.Digested); ok {
			key += "@" + dg.Digest().String()
		}
	}
	return key
}

func (v *validator) operators(prefix string, ops []Operator) {
	seen := map[string]int{}
	for i, o := range ops {
		p := indexPath(prefix, i)
		catalogOK := v.catalog(p+".catalog", o.Catalog)
		if o.TargetCatalog != "" {
			v.repoPath(p+".targetCatalog", "targetCatalog", o.TargetCatalog)
		}
		if o.TargetTag != "" {
			v.tag(p+".targetTag", "targetTag", o.TargetTag)
		}
		v.platforms(p+".platforms", o.Platforms, o.Platforms != nil || v.written(p+".platforms"))
		if catalogOK {
			key := catalogKey(o)
			if j, dup := seen[key]; dup {
				v.report(p+".catalog", ErrInvalid, "duplicate catalog: same target %s as %s (line %d); merge the two entries, or give one of them a different targetCatalog or targetTag",
					strings.TrimSpace(strings.ReplaceAll(key, "\x00", " ")), indexPath(prefix, j), v.at(indexPath(prefix, j)).line)
			} else {
				seen[key] = i
			}
		}
		v.packages(p, o)
	}
}

func (v *validator) packages(op string, o Operator) {
	seen := map[string]int{}
	for j, pk := range o.Packages {
		pp := indexPath(op+".packages", j)
		if pk.Name == "" {
			v.report(pp+".name", ErrInvalid, "package name is empty; set name to a package of the catalog (airlock list operators --catalog %s shows them)", o.Catalog)
		} else if k, dup := seen[pk.Name]; dup {
			v.report(pp+".name", ErrInvalid, "duplicate package %s: already listed as %s (line %d); merge the two entries", quote(pk.Name), indexPath(op+".packages", k), v.at(indexPath(op+".packages", k)).line)
		} else {
			seen[pk.Name] = j
		}
		pkgRange := v.bundleRange(pp, pk.IncludeBundle)
		if pkgRange && o.Full {
			v.report(rangeField(pp, pk.IncludeBundle), ErrInvalid, "full: true keeps every bundle, so a version range means nothing; remove full: true from the catalog or remove the range")
		}

		chSeen := map[string]int{}
		chanRange, mixReported := false, false
		for k, ch := range pk.Channels {
			cp := indexPath(pp+".channels", k)
			if ch.Name == "" {
				v.report(cp+".name", ErrInvalid, "channel name is empty; set name to a channel of the package")
			} else if x, dup := chSeen[ch.Name]; dup {
				v.report(cp+".name", ErrInvalid, "duplicate channel %s: already listed as %s (line %d); merge the two entries", quote(ch.Name), indexPath(pp+".channels", x), v.at(indexPath(pp+".channels", x)).line)
			} else {
				chSeen[ch.Name] = k
			}
			if v.bundleRange(cp, ch.IncludeBundle) {
				chanRange = true
				if pkgRange && !mixReported {
					mixReported = true
					v.report(rangeField(cp, ch.IncludeBundle), ErrInvalid, "package %s has a package-level minVersion/maxVersion and channel %s has its own; use either the package-level range or channel-level ranges, not both", quote(pk.Name), quote(ch.Name))
				}
				if o.Full {
					v.report(rangeField(cp, ch.IncludeBundle), ErrInvalid, "full: true keeps every bundle, so a version range means nothing; remove full: true from the catalog or remove the range")
				}
			}
		}
		if pk.DefaultChannel != "" && len(pk.Channels) > 0 {
			if _, ok := chSeen[pk.DefaultChannel]; !ok {
				v.report(pp+".defaultChannel", ErrInvalid, "defaultChannel %s is not one of the listed channels; add it to channels or pick one of the listed channels", quote(pk.DefaultChannel))
			}
		}

		bSeen := map[string]bool{}
		for b, sb := range pk.SelectedBundles {
			bp := indexPath(pp+".bundles", b)
			if sb.Name == "" {
				v.report(bp+".name", ErrInvalid, "bundle name is empty; set name to a bundle of package %s, e.g. %s.v1.2.3", quote(pk.Name), pk.Name)
			} else if bSeen[sb.Name] {
				v.report(bp+".name", ErrInvalid, "bundle %s is listed twice; remove one", quote(sb.Name))
			}
			bSeen[sb.Name] = true
		}
		if len(pk.SelectedBundles) > 0 {
			switch {
			case pkgRange || chanRange:
				v.report(pp+".bundles", ErrInvalid, "bundles selects exact bundles and cannot be combined with minVersion/maxVersion in the same package; use one or the other")
			case o.Full:
				v.report(pp+".bundles", ErrInvalid, "bundles selects exact bundles but full: true keeps every bundle; remove one of them")
			}
		}
	}
}

// rangeField is the path of the first bound set in b.
func rangeField(p string, b IncludeBundle) string {
	if b.MinVersion != "" {
		return p + ".minVersion"
	}
	return p + ".maxVersion"
}

// bundleRange validates minVersion/maxVersion under p and reports whether either is set.
func (v *validator) bundleRange(p string, b IncludeBundle) bool {
	lo, okLo := v.semver(p+".minVersion", "minVersion", b.MinVersion)
	hi, okHi := v.semver(p+".maxVersion", "maxVersion", b.MaxVersion)
	if okLo && okHi && lo.GT(hi) {
		v.report(p+".minVersion", ErrInvalid, "minVersion %s is greater than maxVersion %s; swap them (minVersion equal to maxVersion selects exactly one bundle)", b.MinVersion, b.MaxVersion)
	}
	return b.MinVersion != "" || b.MaxVersion != ""
}

func (v *validator) semver(p, field, s string) (semver.Version, bool) {
	if s == "" {
		return semver.Version{}, false
	}
	ver, err := semver.Parse(s)
	if err == nil {
		return ver, true
	}
	example := "1.2.0"
	if t, terr := semver.ParseTolerant(s); terr == nil {
		example = t.String()
	}
	v.report(p, ErrInvalid, "%s %s is not a valid semantic version (%s); use a full version like %s", field, quote(s), lowerFirst(err.Error()), example)
	return semver.Version{}, false
}

const catalogExample = "registry.redhat.io/redhat/redhat-operator-index:v4.18"

// catalog validates a catalog reference and reports whether it is usable.
func (v *validator) catalog(p, s string) bool {
	if s == "" {
		v.report(p, ErrInvalid, "catalog is empty; set it to a catalog image such as %s, or oci:///path/to/oci-layout for a catalog on disk", catalogExample)
		return false
	}
	if path, ok := location.CutLayout(s); ok {
		if strings.TrimSpace(path) == "" || strings.ContainsAny(path, "\x00\n") {
			v.report(p, ErrInvalid, "catalog %s has no path; write oci:///absolute/path/to/oci-layout", quote(s))
			return false
		}
		return true
	}
	if v.credentials(p, "catalog", s) {
		return false
	}
	ref := location.ImageRef(s)
	if t, _, ok := strings.Cut(ref, "://"); ok {
		v.report(p, ErrInvalid, "catalog %s uses transport %s://, which is not supported; use a registry reference (optionally prefixed with docker://) or oci://PATH", quote(s), t)
		return false
	}
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		v.report(p, ErrInvalid, "invalid catalog reference %s: %v; use a reference such as %s, or oci:///path/to/oci-layout", quote(s), err, catalogExample)
		return false
	}
	_, tagged := named.(reference.Tagged)
	_, digested := named.(reference.Digested)
	if !tagged && !digested {
		v.report(p, ErrInvalid, "catalog %s has neither a tag nor a digest; add one, e.g. %s:v4.18 or %s@sha256:<digest>", quote(s), s, s)
		return false
	}
	return true
}

// credentials reports a reference s that carries "user:password@" before its
// host (printed as ***@) and says where credentials go instead.
func (v *validator) credentials(p, what, s string) bool {
	red, found := redact.Credentials(s)
	if found {
		host := redact.Host(red)
		v.report(p, ErrInvalid, "%s %s carries credentials, which a configuration file must not hold: remove them and log in instead (podman login %s, or podman login --authfile FILE %s then --authfile FILE)", what, strconv.Quote(red), host, host)
	}
	return found
}

func (v *validator) additionalImage(p string, im Image) {
	switch {
	case im.Name == "":
		v.report(p+".name", ErrInvalid, "image name is empty; set it to an image reference such as registry.example.com/ns/image:tag")
	case v.credentials(p+".name", "additional image", im.Name):
	case location.IsLayout(im.Name):
		v.report(p+".name", ErrInvalid, "additional image %s: oci:// is supported only for operator catalogs; use a registry reference", quote(im.Name))
	default:
		ref := location.ImageRef(im.Name)
		if t, _, ok := strings.Cut(ref, "://"); ok {
			v.report(p+".name", ErrInvalid, "additional image %s uses transport %s://, which is not supported; use a registry reference such as registry.example.com/ns/image:tag", quote(im.Name), t)
		} else if _, err := reference.ParseNormalizedNamed(ref); err != nil {
			v.report(p+".name", ErrInvalid, "invalid image reference %s: %v; use a reference such as registry.example.com/ns/image:tag or ...@sha256:<digest>", quote(im.Name), err)
		}
	}
	if im.TargetRepo != "" {
		v.repoPath(p+".targetRepo", "targetRepo", im.TargetRepo)
	}
	if im.TargetTag != "" {
		v.tag(p+".targetTag", "targetTag", im.TargetTag)
	}
	v.platforms(p+".platforms", im.Platforms, im.Platforms != nil || v.written(p+".platforms"))
}

var (
	pathComponent = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
	repoPathRE    = regexp.MustCompile(`^` + pathComponent + `(?:/` + pathComponent + `)*$`)
	tagRE         = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
)

// repoPath checks a targetCatalog/targetRepo: one or more lowercase path components,
// no registry host, tag or digest.
func (v *validator) repoPath(p, field, s string) {
	if repoPathRE.MatchString(s) && len(s) <= 255 {
		return
	}
	var why string
	switch {
	case strings.ContainsAny(s, "@"):
		why = "must not contain a digest"
	case strings.Contains(s, ":"):
		why = "must not contain a tag; put the tag in targetTag"
	case strings.ToLower(s) != s:
		why = "must be lowercase"
	case strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || strings.Contains(s, "//"):
		why = "must not start or end with / or contain //"
	case len(s) > 255:
		why = "is longer than 255 characters"
	default:
		why = "may only hold lowercase letters, digits and the separators . _ __ - between them, and / between components"
	}
	v.report(p, ErrInvalid, "%s %s %s; write a repository path such as my-namespace/my-catalog", field, quote(s), why)
}

func (v *validator) tag(p, field, s string) {
	if tagRE.MatchString(s) {
		return
	}
	v.report(p, ErrInvalid, "%s %s is not a valid tag; a tag is 1 to 128 letters, digits, _ . or -, not starting with . or -", field, quote(s))
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
