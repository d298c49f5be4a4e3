package seed

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/registry"
)

// RunOptions says what Run seeds and how it reaches the registry.
type RunOptions struct {
	// Registry is the registry host to seed ("127.0.0.1:5000").
	Registry string
	// CatalogDir, CatalogRepo, CatalogTag, CatalogPlatforms and MultiArchEvery
	// are those of Options; CatalogDir may be empty when only Images are
	// seeded (CatalogRepo is then ignored).
	CatalogDir       string
	CatalogRepo      string
	CatalogTag       string
	CatalogPlatforms []string
	MultiArchEvery   int
	// WorkDir receives the rewritten catalog (default: a temporary directory).
	WorkDir string
	// Images are extra references ("registry.example.com/tools/support-tools:1.4")
	// to stand in for: a small image is pushed for each under Registry with the
	// same repository path and tag (digest references get the tag "latest",
	// since a made-up digest cannot be reproduced).
	Images []string
	// Insecure (--dest-tls-verify=false) does not verify the registry's
	// certificate and allows plain HTTP; the zero value verifies.
	Insecure bool
	// AuthFile is the credentials file (--authfile; empty: the default lookup).
	AuthFile string
	// Remote options added after those built from Insecure and AuthFile (tests
	// use it for a transport trusting a private CA).
	Remote []remote.Option
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
}

// RunResult is what Run pushed.
type RunResult struct {
	// Catalog is the catalog Seed pushed (nil without CatalogDir).
	Catalog *Result
	// Images maps each extra image to the seeded reference.
	Images map[string]string
	// Digests maps each seeded extra image to its manifest digest.
	Digests map[string]digest.Digest
}

// Count is the number of images pushed, the catalog image included.
func (r *RunResult) Count() int {
	n := len(r.Images)
	if r.Catalog != nil {
		n += len(r.Catalog.Images) + 1
	}
	return n
}

// Run is `airlock registry seed`: it pushes the catalog (with every image it
// names) and the extra images to o.Registry, with the registry access options of
// the command line (auth file, TLS verification). Like Seed it is idempotent.
func Run(ctx context.Context, o RunOptions) (*RunResult, error) {
	if o.Registry == "" {
		return nil, errors.New("seed: no registry given: use --registry HOST:PORT")
	}
	if o.CatalogDir == "" && len(o.Images) == 0 {
		return nil, errors.New("seed: nothing to seed: give --catalog-dir (with --catalog-repo) and/or --image")
	}
	if o.CatalogDir != "" && o.CatalogRepo == "" {
		return nil, errors.New("seed: --catalog-dir needs --catalog-repo, the repository of the catalog image (e.g. demo/demo-index)")
	}
	// Seeding writes generated images with go-containerregistry's remote package
	// (a development tool, not the mirror path, which uses registry.Client only).
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: o.Insecure} //nolint:gosec // --tls-verify=false
	ropts := []remote.Option{remote.WithAuthFromKeychain(registry.AuthKeychain(o.AuthFile)), remote.WithTransport(tr), remote.WithUserAgent("airlock")}
	r, err := Seed(ctx, Options{
		Registry: o.Registry, CatalogDir: o.CatalogDir, CatalogRepo: o.CatalogRepo,
		CatalogTag: o.CatalogTag, CatalogPlatforms: o.CatalogPlatforms, MultiArchEvery: o.MultiArchEvery,
		WorkDir: o.WorkDir, Remote: append(ropts, o.Remote...), Insecure: o.Insecure, Logger: o.Logger,
		Images: o.Images,
	})
	if err != nil {
		return nil, err
	}
	res := &RunResult{Images: r.Extra, Digests: map[string]digest.Digest{}}
	for _, seeded := range r.Extra {
		res.Digests[seeded] = r.Digests[seeded]
	}
	if o.CatalogDir != "" {
		res.Catalog = r
	}
	return res, nil
}
