// Package location is airlock's one location type: where a command reads or
// writes, written docker://REGISTRY[:PORT][/NAMESPACE], file://DIR or
// oci://PATH on the command line and in configuration files.
//
// A location is parsed once, where its flag, argument or field is read, by the
// parser of what that flag accepts (ParseDestination, ParseDir, ParseRegistry,
// ParseImage, Parse); a refused input is an *Error naming the flag, the input
// and what to write instead. String gives the canonical form back, with its
// scheme, for every command line airlock prints. Nothing else in the module
// cuts a scheme off a string: an image reference that may carry the docker://
// transport goes through ImageRef, a catalog that may be an OCI layout
// through CutLayout (internal/depcheck's TestNoSchemeLiterals keeps it so).
//
// It is a leaf: it imports nothing of airlock, and any package may use it.
package location

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Scheme is the kind of a location, written before "://".
type Scheme uint8

// The schemes; the zero Scheme is no location.
const (
	// SchemeDocker is a registry: docker://REGISTRY[:PORT][/NAMESPACE], or an
	// image reference docker://REGISTRY/REPOSITORY[:TAG].
	SchemeDocker Scheme = iota + 1
	// SchemeFile is a folder on disk: file://DIR.
	SchemeFile
	// SchemeOCI is an OCI image layout on disk: oci://PATH.
	SchemeOCI
)

// schemes lists every Scheme with its name, in the order inputs are tried.
var schemes = [...]struct {
	s    Scheme
	name string
}{{SchemeDocker, "docker"}, {SchemeFile, "file"}, {SchemeOCI, "oci"}}

// String is the scheme's name ("docker", "file", "oci"; "" for none).
func (s Scheme) String() string {
	for _, e := range schemes {
		if e.s == s {
			return e.name
		}
	}
	return ""
}

// Prefix is the scheme as written before a location's path ("docker://").
func (s Scheme) Prefix() string {
	if n := s.String(); n != "" {
		return n + "://"
	}
	return ""
}

// cut returns s without the scheme's prefix, and whether s had it.
func (s Scheme) cut(in string) (string, bool) { return strings.CutPrefix(in, s.Prefix()) }

// Location is one parsed location. The zero Location is "not given".
type Location struct {
	Scheme Scheme
	// Path is what follows the scheme: the folder (SchemeFile, cleaned as
	// filepath.Clean does), the layout's path (SchemeOCI, as written), or
	// REGISTRY[:PORT][/NAMESPACE…] or an image reference (SchemeDocker,
	// without a trailing "/").
	Path string
}

// Docker is the registry location docker://path (path: REGISTRY[:PORT][/NAMESPACE]
// or an image reference, without its scheme).
func Docker(path string) Location {
	return Location{Scheme: SchemeDocker, Path: strings.TrimRight(path, "/")}
}

// File is the folder location file://dir.
func File(dir string) Location { return Location{Scheme: SchemeFile, Path: filepath.Clean(dir)} }

// OCI is the OCI image layout location oci://path.
func OCI(path string) Location { return Location{Scheme: SchemeOCI, Path: path} }

// String is the canonical form, with its scheme ("" for the zero Location):
// what any command line airlock prints (a "next:" suggestion, a Job's
// arguments) writes.
func (l Location) String() string {
	if l.Scheme == 0 {
		return ""
	}
	return l.Scheme.Prefix() + l.Path
}

// IsZero reports whether l is the zero Location (not given).
func (l Location) IsZero() bool { return l == Location{} }

// Is reports whether l has scheme s.
func (l Location) Is(s Scheme) bool { return l.Scheme == s }

// Registry is the registry host[:port] of a docker:// location ("" for the
// other schemes).
func (l Location) Registry() string {
	if l.Scheme != SchemeDocker {
		return ""
	}
	host, _, _ := strings.Cut(l.Path, "/")
	return host
}

// Namespace is what follows the registry host of a docker:// location
// (NAMESPACE, maybe several components; "" when there is none).
func (l Location) Namespace() string {
	if l.Scheme != SchemeDocker {
		return ""
	}
	_, ns, _ := strings.Cut(l.Path, "/")
	return ns
}

// ErrInvalid is wrapped by every *Error.
var ErrInvalid = errors.New("invalid location")

// Error is an input a parser refused: Flag is what the user wrote it as
// ("--from", "destination"), Input what was written, Want what to write
// instead, and Suggest, when the input only lacks its scheme, the input
// written with it. Its message reads `FLAG "INPUT" must be WANT` (then
// "(did you mean SUGGEST?)").
type Error struct {
	Flag, Input, Want, Suggest string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("%s %q must be %s", e.Flag, e.Input, e.Want)
	if e.Suggest != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", e.Suggest)
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Unwrap() error { return ErrInvalid }

// What each parser accepts, as its errors say.
const (
	// WantDestination is what airlock mirror takes as its destination.
	WantDestination = "docker://REGISTRY[:PORT]/NAMESPACE or file://DIR"
	// WantDir is what a folder flag (--from, --workspace…) takes.
	WantDir = "file://DIR or DIR"
	// WantRegistry is what a registry destination (airlock delete, kube job,
	// history retire) takes.
	WantRegistry = "docker://REGISTRY[:PORT]/NAMESPACE"
	// WantImage is what an image destination (airlock kube image) takes.
	WantImage = "docker://REGISTRY/REPOSITORY[:TAG]"
	// WantAny is what Parse takes.
	WantAny = "docker://REGISTRY[:PORT][/NAMESPACE], file://DIR or oci://PATH"
)

// Parse reads a location written with its scheme: docker://REGISTRY[:PORT][/NAMESPACE]
// (or an image reference), file://DIR or oci://PATH. The path must not be
// empty; a docker:// location must start with its registry host.
func Parse(s string) (Location, error) {
	l, ok := parse(s)
	if !ok {
		return Location{}, &Error{Flag: "location", Input: s, Want: WantAny}
	}
	return l, nil
}

// parse is Parse without its error.
func parse(s string) (Location, bool) {
	for _, e := range schemes {
		p, ok := e.s.cut(s)
		if !ok {
			continue
		}
		switch e.s {
		case SchemeDocker:
			l := Docker(p)
			return l, l.Path != "" && !strings.HasPrefix(l.Path, "/")
		case SchemeFile:
			return File(p), p != ""
		default:
			return OCI(p), p != ""
		}
	}
	return Location{}, false
}

// ParseDestination reads airlock mirror's destination argument:
// docker://REGISTRY[:PORT]/NAMESPACE (mirror-to-mirror, disk-to-mirror) or
// file://DIR (mirror-to-disk). A bare folder or reference is refused: the
// scheme says which workflow runs.
func ParseDestination(s string) (Location, error) {
	if l, ok := parse(s); ok && l.Scheme != SchemeOCI {
		return l, nil
	}
	e := &Error{Flag: "destination", Input: s, Want: WantDestination}
	if bare(s) {
		e.Suggest = Docker(s).String()
		if strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") {
			e.Suggest = File(s).String()
		}
	}
	return Location{}, e
}

// bare reports whether s may be a location written without its scheme.
func bare(s string) bool {
	return s != "" && !strings.Contains(s, "://") && strings.TrimSpace(s) == s
}

// registryError is the error of a parser that wants a docker:// location.
func registryError(flag, s, want string) error {
	e := &Error{Flag: flag, Input: s, Want: want}
	if bare(s) && !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, ".") {
		e.Suggest = Docker(s).String()
	}
	return e
}

// ParseDir reads a folder given to flag (its name serves the error, e.g.
// "--workspace"): file://DIR or DIR. Another scheme is refused.
func ParseDir(flag, s string) (Location, error) {
	p, ok := SchemeFile.cut(s)
	if !ok && strings.Contains(s, "://") {
		p = "" // another scheme
	}
	if p == "" {
		return Location{}, &Error{Flag: flag, Input: s, Want: WantDir}
	}
	return File(p), nil
}

// ParseRegistry reads a registry given to flag (its name serves the error):
// docker://REGISTRY[:PORT][/NAMESPACE].
func ParseRegistry(flag, s string) (Location, error) {
	if l, ok := parse(s); ok && l.Scheme == SchemeDocker {
		return l, nil
	}
	return Location{}, registryError(flag, s, WantRegistry)
}

// ParseImage reads an image given to flag (its name serves the error):
// docker://REGISTRY/REPOSITORY[:TAG]. The reference itself is left to its
// parser (oci.ParseReference).
func ParseImage(flag, s string) (Location, error) {
	if l, ok := parse(s); ok && l.Scheme == SchemeDocker {
		return l, nil
	}
	return Location{}, registryError(flag, s, WantImage)
}

// ImageRef is the registry reference s (an image reference, or
// REGISTRY[/NAMESPACE]) without its optional docker:// transport: the one place
// that prefix is cut from a reference of the configuration or the command line.
func ImageRef(s string) string {
	if p, ok := SchemeDocker.cut(s); ok {
		return p
	}
	return s
}

// CutLayout returns the path of an OCI layout reference oci://PATH (as
// written, maybe with a :TAG or @DIGEST the caller reads) and true, or "" and
// false when s is not one (a registry reference).
func CutLayout(s string) (path string, ok bool) { return SchemeOCI.cut(s) }

// IsLayout reports whether s is an OCI layout reference oci://PATH.
func IsLayout(s string) bool { return SchemeOf(s) == SchemeOCI }

// SchemeOf is the scheme s is written with, whatever follows it (0 when s
// has none of the three).
func SchemeOf(s string) Scheme {
	for _, e := range schemes {
		if _, ok := e.s.cut(s); ok {
			return e.s
		}
	}
	return 0
}

// CutChartRegistry returns HOST/PATH of a Helm chart repository URL
// oci://HOST/PATH: Helm's scheme for charts in an OCI registry (not an OCI
// layout on disk, as oci:// is elsewhere).
func CutChartRegistry(url string) (string, bool) { return SchemeOCI.cut(url) }
