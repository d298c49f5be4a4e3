package validate

import (
	"context"
	// go-digest (used by reference parsing) only accepts the algorithms whose
	// hash is linked into the binary.
	_ "crypto/sha256"
	_ "crypto/sha512"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"

	"github.com/airlock-mirror/airlock/fbc"
)

// ErrInvalidCatalog matches every *ValidationError with errors.Is.
var ErrInvalidCatalog = errors.New("invalid catalog")

// Problem is one rule a catalog breaks. Package, Channel and Bundle locate it (empty
// when not relevant); Message uses opm's wording where opm has a rule for it.
type Problem struct {
	Package string `json:"package,omitempty"`
	Channel string `json:"channel,omitempty"`
	Bundle  string `json:"bundle,omitempty"`
	Message string `json:"message"`
}

// String renders the problem on one line, naming where it is.
func (p Problem) String() string {
	var b strings.Builder
	if p.Package != "" || p.Channel != "" || p.Bundle != "" {
		fmt.Fprintf(&b, "package %q", p.Package)
		if p.Channel != "" {
			fmt.Fprintf(&b, ", channel %q", p.Channel)
		}
		if p.Bundle != "" {
			fmt.Fprintf(&b, ", bundle %q", p.Bundle)
		}
		b.WriteString(": ")
	} else {
		b.WriteString("catalog: ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// ValidationError lists every problem Catalog found, sorted by package, channel,
// bundle and message.
type ValidationError struct {
	Problems []Problem
}

// Error prints one problem per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Is makes errors.Is(err, ErrInvalidCatalog) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidCatalog }

// metaNameRE is the name rule `opm serve` (v1.69+) applies to custom schemas and to
// the package names of custom blobs when it builds its cache.
var metaNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]*$`)

// dns1123LabelRE is Kubernetes' RFC 1123 label.
var dns1123LabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

const dns1123LabelMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"

// Dir loads the catalog rooted at the directory dir with heavy property
// values elided and validates it. A catalog that cannot be loaded gives the load
// error (a *fbc.LoadError names the file and document); an invalid one gives a
// *ValidationError, together with the counts of what was loaded.
func Dir(ctx context.Context, dir string, log *slog.Logger) (fbc.CatalogCounts, error) {
	c, err := fbc.LoadDir(ctx, dir, fbc.LoadOptions{ElideHeavy: true, Logger: log})
	if err != nil {
		return fbc.CatalogCounts{}, err
	}
	return fbc.CountCatalog(c), Catalog(c)
}

// Catalog checks c against every rule of the newest `opm validate` (model
// conversion and model validation) plus the stricter checks `opm serve` applies
// when it builds its cache (custom schema and package names, at most one
// olm.csv.metadata per bundle). It reports all problems, not only the first: nil
// when the catalog is valid, else a *ValidationError.
//
// Property values are decoded as opm decodes them: a bad olm.bundle.object (not
// base64, or data that is neither JSON nor YAML) is reported as opm's loader
// reports it. Values fbc.Load elided (fbc.LoadOptions.ElideHeavy) were checked by Load
// before they were dropped; Catalog reports what it found there, so the
// problems are the same whether the values were kept or not.
func Catalog(c *fbc.Catalog) error {
	v := &validator{imageErrs: make(map[string]error)}
	if c == nil {
		return nil
	}
	for _, p := range c.Packages {
		v.pkg(p)
	}
	for _, m := range c.Others {
		v.meta("", m)
	}
	return v.result()
}

type validator struct {
	problems []Problem
	// imageErrs caches reference parse results: the same images recur across bundles.
	imageErrs map[string]error
	// pc decodes and checks the property values.
	pc fbc.PropertyChecker
}

func (v *validator) add(pkg, ch, bundle, format string, args ...any) {
	v.problems = append(v.problems, Problem{Package: pkg, Channel: ch, Bundle: bundle, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) result() error {
	if len(v.problems) == 0 {
		return nil
	}
	ps := v.problems
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Package != b.Package {
			return a.Package < b.Package
		}
		if a.Channel != b.Channel {
			return a.Channel < b.Channel
		}
		if a.Bundle != b.Bundle {
			return a.Bundle < b.Bundle
		}
		return a.Message < b.Message
	})
	out := ps[:0]
	for i, p := range ps {
		if i > 0 && p == ps[i-1] {
			continue
		}
		out = append(out, p)
	}
	return &ValidationError{Problems: out}
}

func (v *validator) pkg(p *fbc.Package) {
	name := p.Name
	known := p.Declared > 0

	// Package document rules.
	switch {
	case !known:
		// Everything naming it is reported below as pointing at an unknown package.
	case name == "":
		v.add(name, "", "", "config contains package with no name")
	default:
		if p.Declared > 1 {
			v.add(name, "", "", "duplicate package %q", name)
		}
		if errs := dns1123Label(name); len(errs) > 0 {
			v.add(name, "", "", "invalid package name %q: [%s]", name, strings.Join(errs, " "))
		}
	}

	// Channels.
	channelsByName := make(map[string]*fbc.Channel, len(p.Channels))
	entryNames := make(map[string]bool)
	for _, ch := range p.Channels {
		if !known {
			v.add(name, ch.Name, "", "unknown package %q for channel %q", name, ch.Name)
		}
		if ch.Name == "" {
			v.add(name, "", "", "package %q contains channel with no name", name)
		} else if _, dup := channelsByName[ch.Name]; dup {
			v.add(name, ch.Name, "", "package %q has duplicate channel %q", name, ch.Name)
		} else {
			channelsByName[ch.Name] = ch
		}
		for _, e := range ch.Entries {
			entryNames[e.Name] = true
		}
	}

	// Bundles.
	bundlesByName := make(map[string]*fbc.Bundle, len(p.Bundles))
	for _, b := range p.Bundles {
		if b.Name != "" {
			if _, dup := bundlesByName[b.Name]; dup {
				if name != "" {
					v.add(name, "", b.Name, "package %q has duplicate bundle %q", name, b.Name)
				}
				continue
			}
			bundlesByName[b.Name] = b
		}
	}

	// Package-level rules that need the channels.
	if known {
		switch {
		case p.DefaultChannel == "":
			v.add(name, "", "", "default channel must be set")
		default:
			if _, ok := channelsByName[p.DefaultChannel]; !ok {
				v.add(name, p.DefaultChannel, "", "channel must contain at least one bundle (default channel %q has no olm.channel document)", p.DefaultChannel)
			}
		}
		if len(p.Channels) == 0 {
			v.add(name, "", "", "package must contain at least one channel")
		}
	}

	for _, ch := range p.Channels {
		v.channel(p, ch, bundlesByName)
	}

	versions := make(map[versionKey][]string)
	for _, b := range p.Bundles {
		first := b.Name == "" || bundlesByName[b.Name] == b
		v.bundle(p, b, entryNames, first, versions)
	}
	v.duplicateVersions(name, versions)

	v.deprecations(p, channelsByName, bundlesByName)

	for _, m := range p.Others {
		v.meta(name, m)
	}
}

func dns1123Label(s string) []string {
	var errs []string
	if len(s) > 63 {
		errs = append(errs, "must be no more than 63 characters")
	}
	if !dns1123LabelRE.MatchString(s) {
		errs = append(errs, dns1123LabelMsg)
	}
	return errs
}

func (v *validator) channel(p *fbc.Package, ch *fbc.Channel, bundles map[string]*fbc.Bundle) {
	pkg := p.Name
	if len(ch.Entries) == 0 {
		v.add(pkg, ch.Name, "", "channel must contain at least one bundle")
		return
	}
	seen := make(map[string]bool, len(ch.Entries))
	var missing []string
	for i, e := range ch.Entries {
		if e.Name == "" {
			v.add(pkg, ch.Name, "", "entry [%d] has no name: every channel entry must name an olm.bundle", i)
		} else if seen[e.Name] {
			v.add(pkg, ch.Name, "", "invalid package %q, channel %q: duplicate entry %q", pkg, ch.Name, e.Name)
		}
		if e.Name != "" && !seen[e.Name] {
			if _, ok := bundles[e.Name]; !ok {
				missing = append(missing, e.Name)
			}
		}
		seen[e.Name] = true
		for j, s := range e.Skips {
			if s == "" {
				v.add(pkg, ch.Name, e.Name, "skip[%d] is empty", j)
			}
		}
		if e.SkipRange != "" {
			if _, err := fbc.ParseSkipRange(e.SkipRange); err != nil {
				v.add(pkg, ch.Name, e.Name, "invalid skipRange %q: %v", e.SkipRange, err)
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		v.add(pkg, ch.Name, "", "no olm.bundle blobs found in package %q for olm.channel entries [%s]", pkg, strings.Join(missing, " "))
	}

	if err := fbc.NewGraph(ch).Check(); err != nil {
		v.add(pkg, ch.Name, "", "%s", err.Error())
	}
}
