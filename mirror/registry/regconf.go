package registry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"
	"github.com/containers/image/v5/docker/reference"
	"github.com/containers/image/v5/pkg/sysregistriesv2"
	"github.com/containers/image/v5/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// ErrBlocked is returned (wrapped) for an image whose source registries.conf
// blocks (a [[registry]] entry with blocked = true). It is permanent and fails
// that image only.
var ErrBlocked = errors.New("blocked by registries.conf")

// ErrRegistriesConf is returned (wrapped) when registries.conf cannot be read:
// a TOML error (the file and line named), a file that does not exist, an entry
// containers/image refuses.
var ErrRegistriesConf = errors.New("registries.conf")

// ErrShortName is returned (wrapped) by RegistriesConf.Qualified for a short
// name ("busybox", "ubi8/ubi"): airlock never searches registries for an image.
var ErrShortName = errors.New("short image name")

// RegistriesConf is the containers registries.conf (containers-registries.conf(5),
// read by containers/image's sysregistriesv2, as podman, skopeo and oc-mirror do)
// of a source client: [[registry]] entries rewrite where an image is pulled from
// (prefix and location), list mirrors tried in order before the location
// (mirror-by-digest-only and pull-from-mirror honoured: a tag is never pulled from
// a digest-only mirror), block registries, and mark hosts insecure (plain HTTP or
// unverified TLS). Only the place bytes come from changes: repositories keep their
// source names everywhere else, and every manifest pulled by digest is verified
// against it, from a mirror as from the source.
type RegistriesConf struct {
	sys     *types.SystemContext
	from    string // the files read, for messages
	entries []sysregistriesv2.Registry

	mu     sync.Mutex
	places map[string][]pullSource // by repository and kind of reference
}

// LoadRegistriesConf reads registries.conf: path (--registries-conf) when set, else
// $CONTAINERS_REGISTRIES_CONF (or $REGISTRIES_CONFIG_PATH) when set, else the system
// files containers/image reads when present (~/.config/containers/registries.conf,
// or /etc/containers/registries.conf and the *.conf files of registries.conf.d).
// A named file must exist; every file read must parse.
func LoadRegistriesConf(path string) (*RegistriesConf, error) {
	path, from := registriesConfPath(path)
	sys := &types.SystemContext{SystemRegistriesConfPath: path, SystemRegistriesConfDirPath: dropInDir}
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%w: %s %s: %v: give the path of an existing registries.conf", ErrRegistriesConf, from, path, errors.Unwrap(err))
		}
	}
	c := &RegistriesConf{sys: sys, from: sysregistriesv2.ConfigurationSourceDescription(sys), places: map[string][]pullSource{}}
	// Loading is what this call does first; its errors name the file, and a TOML
	// error its line.
	if _, _, err := sysregistriesv2.UnqualifiedSearchRegistriesWithOrigin(sys); err != nil {
		return nil, fmt.Errorf("%w (%s): %v: fix the file (containers-registries.conf(5))", ErrRegistriesConf, c.from, err)
	}
	regs, err := sysregistriesv2.GetRegistries(sys) //nolint:staticcheck // the only way to list every entry
	if err != nil {
		return nil, fmt.Errorf("%w (%s): %v", ErrRegistriesConf, c.from, err)
	}
	c.entries = regs
	return c, nil
}

// Path is the registries.conf file read ("": the system files), for other
// readers of the same sources (the signature policy's).
func (c *RegistriesConf) Path() string { return c.sys.SystemRegistriesConfPath }

// registriesConfPath is the registries.conf named by flag (--registries-conf) or
// else the environment, and where the name came from; "" for the system files.
func registriesConfPath(flag string) (path, from string) {
	path, from = flag, "--registries-conf"
	for _, env := range []string{"CONTAINERS_REGISTRIES_CONF", "REGISTRIES_CONFIG_PATH"} {
		if path == "" {
			path, from = os.Getenv(env), "$"+env
		}
	}
	return path, from
}

// dropInDir, when set, replaces the registries.conf.d folders (tests: the
// machine's own files must not change what a test file means).
var dropInDir = ""

// pullSource is one place an image may be pulled from: a repository ("host/path")
// and whether its host is insecure.
type pullSource struct {
	repo     string
	insecure bool
}

// sources lists where repo is pulled from, in order: the mirrors that apply to
// reference (a tag or a digest; "" for an operation that is neither, such as
// listing tags, which counts as a tag), then the location. An image the
// configuration blocks is an ErrBlocked.
func (c *RegistriesConf) sources(repo, ref string) ([]pullSource, error) {
	_, derr := digest.Parse(ref)
	key := repo + "\x00" + fmt.Sprint(derr == nil)
	c.mu.Lock()
	ps, ok := c.places[key]
	c.mu.Unlock()
	if ok {
		return ps, nil
	}
	ps, err := c.lookup(repo, ref)
	if err == nil {
		c.mu.Lock()
		c.places[key] = ps
		c.mu.Unlock()
	}
	return ps, err
}

// lookup is sources without the memory.
func (c *RegistriesConf) lookup(repo, ref string) ([]pullSource, error) {
	named, err := reference.ParseNormalizedNamed(repo)
	if err != nil || len(c.entries) == 0 {
		return []pullSource{{repo: repo}}, nil // a bad name: the request itself will say what is wrong
	}
	reg, err := sysregistriesv2.FindRegistry(c.sys, named.Name())
	if err != nil {
		return nil, retry.Permanent(fmt.Errorf("%w (%s): %v", ErrRegistriesConf, c.from, err))
	}
	if reg == nil {
		return []pullSource{{repo: repo}}, nil
	}
	if reg.Blocked {
		return nil, retry.Permanent(fmt.Errorf("%w: %s matches the [[registry]] entry prefix = %q, which has blocked = true (%s): remove the image from the configuration, or the entry from registries.conf", ErrBlocked, repo, reg.Prefix, c.definedIn(reg.Prefix)))
	}
	if dg, perr := digest.Parse(ref); perr == nil {
		named, err = reference.WithDigest(named, dg)
	} else {
		named, err = reference.WithTag(named, "latest") // the tag's value does not choose sources
	}
	if err != nil {
		return []pullSource{{repo: repo}}, nil
	}
	ps, err := reg.PullSourcesFromReference(named)
	if err != nil {
		return nil, retry.Permanent(fmt.Errorf("%w (%s): [[registry]] prefix = %q: %v", ErrRegistriesConf, c.definedIn(reg.Prefix), reg.Prefix, err))
	}
	out := make([]pullSource, 0, len(ps))
	for _, p := range ps {
		out = append(out, pullSource{repo: p.Reference.Name(), insecure: p.Endpoint.Insecure})
	}
	return out, nil
}

// Blocked returns the ErrBlocked error (naming the file and its entry) when
// the configuration blocks repo, nil otherwise. It reads no network: a run
// checks an image it fetches outside planning before any work.
func (c *RegistriesConf) Blocked(repo string) error {
	if c == nil {
		return nil
	}
	_, err := c.lookup(repo, "")
	if errors.Is(err, ErrBlocked) {
		return err
	}
	return nil
}

// allSources is every place repo may be pulled from, by tag or by digest (for
// probing): nil when the configuration blocks repo.
func (c *RegistriesConf) allSources(repo string) []pullSource {
	byDigest, err := c.sources(repo, digest.FromString("").String())
	if err != nil {
		return nil
	}
	byTag, _ := c.sources(repo, "")
	seen := map[string]bool{}
	var out []pullSource
	for _, list := range [][]pullSource{byDigest[:len(byDigest)-1], byTag} { // the location last
		for _, s := range list {
			if !seen[s.repo] {
				seen[s.repo] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// mirrored reports whether some [[registry]] entry for a part of host lists
// mirrors: a host found down may still serve some of its images through them.
func (c *RegistriesConf) mirrored(host string) bool {
	for _, r := range c.entries {
		if len(r.Mirrors) > 0 && (r.Prefix == host || strings.HasPrefix(r.Prefix, host+"/")) {
			return true
		}
	}
	return false
}

// definedIn names the file that defines the [[registry]] entry of prefix: the
// last of the files read whose text holds it (drop-in files override the main
// one), else the files read.
func (c *RegistriesConf) definedIn(prefix string) string {
	found := ""
	for _, f := range c.files() {
		if b, err := os.ReadFile(f); err == nil && strings.Contains(string(b), `"`+prefix+`"`) {
			found = f
		}
	}
	if found == "" {
		return c.from
	}
	return found
}

// files are the files read, in the order containers/image reads them (each
// overrides the ones before).
func (c *RegistriesConf) files() []string {
	files := []string{sysregistriesv2.ConfigPath(c.sys)} //nolint:staticcheck // the file list, for messages
	for _, dir := range strings.Split(c.from, ", ")[1:] {
		m, _ := filepath.Glob(filepath.Join(dir, "*.conf"))
		sort.Strings(m)
		files = append(files, m...)
	}
	return files
}

// alias is the [aliases] entry of a short name in the files read, and the file
// that sets it. (containers/image's ResolveShortNameAlias would also create
// its own lock file under /var/cache or ~/.cache: a suggestion in an error
// message is not worth a side effect.)
func (c *RegistriesConf) alias(short string) (value, origin string) {
	for _, f := range c.files() {
		var doc struct {
			Aliases map[string]string `toml:"aliases"`
		}
		if _, err := toml.DecodeFile(f, &doc); err == nil {
			if v, ok := doc.Aliases[short]; ok {
				value, origin = v, f
			}
		}
	}
	return value, origin
}

// Qualified checks that name (an image reference from the configuration) names
// its registry. A short name ("busybox", "ubi8/ubi:8.9") is an ErrShortName whose
// message gives the fully-qualified name to write: the registries.conf alias of
// the name when there is one, else the names the unqualified-search-registries
// would try, else docker.io's.
func (c *RegistriesConf) Qualified(name string) error {
	in := location.ImageRef(name)
	named, err := reference.ParseNormalizedNamed(in)
	if err != nil {
		return nil // not a reference: the configuration's checks say so
	}
	if first, _, ok := strings.Cut(in, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return nil
	}
	short := reference.FamiliarName(named)
	rest := strings.TrimPrefix(reference.FamiliarString(named), short)
	var suggest []string
	where := ""
	if alias, origin := c.alias(short); alias != "" {
		suggest, where = []string{alias + rest}, " (the alias in "+origin+")"
	} else if regs, origin, err := sysregistriesv2.UnqualifiedSearchRegistriesWithOrigin(c.sys); err == nil && len(regs) > 0 {
		for _, r := range regs {
			suggest = append(suggest, r+"/"+short+rest)
		}
		where = " (the unqualified-search-registries of " + origin + ")"
	} else {
		suggest = []string{named.Name() + rest}
	}
	return fmt.Errorf("%w %q: write the registry too, e.g. %s%s; airlock does not search registries for an image", ErrShortName, name, strings.Join(suggest, " or "), where)
}

// insecureHost reports whether registries.conf marks host insecure (plain HTTP
// allowed, TLS not verified); hosts are learnt as their sources are listed.
func (r *Client) insecureHost(host string) bool {
	hs := r.hostOf(host)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.insecure
}

// sourceKey carries, in the context of one read operation, the repository to
// contact instead of the one asked for (a mirror, or a rewritten location).
type sourceKey struct{}

// read runs the read operation f on repo (see op) at each place registries.conf
// says repo is pulled from for ref, in order, until one succeeds: the single
// point where a source repository becomes a host to contact (client reads the
// choice from the context). Without registries.conf it is op.
func (r *Client) read(ctx context.Context, repo, ref, what string, f func(ctx context.Context) error) error {
	if r.opts.Sources == nil || len(r.opts.Sources.entries) == 0 {
		return r.op(ctx, repo, what, f)
	}
	srcs, err := r.opts.Sources.sources(repo, ref)
	if err != nil {
		return err
	}
	r.learnInsecure(srcs)
	var failed []string
	for i, s := range srcs {
		if err = r.op(context.WithValue(ctx, sourceKey{}, s.repo), s.repo, what, f); err == nil || ctx.Err() != nil {
			return err
		}
		if i < len(srcs)-1 {
			failed = append(failed, s.repo+": "+err.Error())
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w (the registries.conf mirrors tried first failed too: %s)", err, strings.Join(failed, "; "))
	}
	return err
}

// contacted is the repository a read operation contacts for repo.
func contacted(ctx context.Context, repo string, push bool) string {
	if s, ok := ctx.Value(sourceKey{}).(string); ok && !push {
		return s
	}
	return repo
}

// learnInsecure remembers the insecure hosts among srcs.
func (r *Client) learnInsecure(srcs []pullSource) {
	for _, s := range srcs {
		if s.insecure {
			hs := r.hostOf(endpoint.RepoHost(s.repo))
			hs.mu.Lock()
			hs.insecure = true
			hs.mu.Unlock()
		}
	}
}

// probeSources probes the places repo is pulled from (see Probe): the first that
// answers is enough. A repository the configuration blocks is not probed: each of
// its images fails with ErrBlocked.
func (r *Client) probeSources(ctx context.Context, repo string) error {
	srcs := r.opts.Sources.allSources(repo)
	r.learnInsecure(srcs)
	var err error
	for _, s := range srcs {
		if err = r.probeOnce(ctx, s.repo, false); err == nil || ctx.Err() != nil {
			return err
		}
	}
	if host := endpoint.RepoHost(repo); err != nil && r.opts.Sources.mirrored(host) {
		// Not an ErrRegistryUnreachable: images of host with mirrors may still come.
		return fmt.Errorf("%v (registries.conf lists mirrors for images of %s: they are tried image by image)", err, host)
	}
	return err
}
