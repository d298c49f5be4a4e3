package helm

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// Fetcher reads chart repositories over HTTP(S). Its client carries the
// TLS settings and credentials of the caller's conventions (certificate
// folders, auth files); every request has a deadline.
type Fetcher struct {
	// Client does the requests (nil: http.DefaultClient, which verifies TLS).
	Client *http.Client
	// Timeout bounds each request (0: 2 minutes).
	Timeout time.Duration
	// Retry is the retry policy of each request (nil: retry's default).
	Retry *retry.Policy
	// Log receives the retries (nil: none).
	Log *slog.Logger
	// MaxChartSize bounds a chart archive (0: 64 MiB); MaxIndexSize an index
	// (0: 256 MiB).
	MaxChartSize, MaxIndexSize int64
}

// ErrDigestMismatch is wrapped by the error about a chart archive whose
// SHA-256 is not the digest its index gives.
var ErrDigestMismatch = errors.New("chart archive does not match its index digest")

// Index reads the index.yaml of the repository at repoURL.
func (f *Fetcher) Index(ctx context.Context, repoURL string) (*Index, error) {
	u := strings.TrimSuffix(repoURL, "/") + "/index.yaml"
	data, err := f.get(ctx, u, f.maxIndex())
	if err != nil {
		return nil, fmt.Errorf("chart repository %s: %w", repoURL, err)
	}
	return ParseIndex(data, u)
}

// Chart downloads v's archive from the repository at repoURL and checks it
// against the digest the index gives (CheckDigest).
func (f *Fetcher) Chart(ctx context.Context, repoURL string, v *ChartVersion) ([]byte, error) {
	u, err := ChartURL(repoURL, v)
	if err != nil {
		return nil, err
	}
	data, err := f.get(ctx, u, f.maxChart())
	if err != nil {
		return nil, fmt.Errorf("chart %s %s: %w", v.Name, v.Version, err)
	}
	if err := CheckDigest(data, v); err != nil {
		return nil, err
	}
	return data, nil
}

// CheckDigest checks a chart archive against v's index digest. An index
// entry without a digest cannot be checked: that is an error too, since
// nothing unverified is mirrored.
func CheckDigest(data []byte, v *ChartVersion) error {
	sum := sha256.Sum256(data)
	got := hex.EncodeToString(sum[:])
	want := strings.TrimPrefix(strings.ToLower(v.Digest), "sha256:")
	if want == "" {
		return fmt.Errorf("chart %s %s: the repository index gives no digest, so the archive (sha256:%s) cannot be verified; ask the repository to publish digests (helm repo index does)", v.Name, v.Version, got)
	}
	if got != want {
		return fmt.Errorf("chart %s %s: %w: index says sha256:%s, the archive served is sha256:%s (the repository changed the archive, or something between altered it)", v.Name, v.Version, ErrDigestMismatch, want, got)
	}
	return nil
}

func (f *Fetcher) get(ctx context.Context, u string, limit int64) ([]byte, error) {
	t := f.Timeout
	if t <= 0 {
		t = 2 * time.Minute
	}
	data, err := retry.OrDefault(f.Retry).GetDocument(ctx, f.Log, u, retry.Get{Client: f.Client, Timeout: t, MaxBytes: limit})
	var cv *tls.CertificateVerificationError
	if errors.As(err, &cv) {
		host := u
		if pu, perr := url.Parse(u); perr == nil {
			host = pu.Host
		}
		return nil, fmt.Errorf("%w (the repository's certificate is not trusted: put its CA in certs.d/%s/ca.crt or in the folder --src-cert-dir names, or skip verification with --src-tls-verify=false)", err, host)
	}
	if re, ok := endpoint.AsRegistryError(err); ok {
		switch re.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return nil, fmt.Errorf("%w (log in to the host with podman login, or pass --authfile)", err)
		case http.StatusNotFound:
			return nil, fmt.Errorf("%w (check the repository URL)", err)
		}
	}
	return data, err
}

func (f *Fetcher) maxChart() int64 {
	if f.MaxChartSize > 0 {
		return f.MaxChartSize
	}
	return 64 << 20
}

func (f *Fetcher) maxIndex() int64 {
	if f.MaxIndexSize > 0 {
		return f.MaxIndexSize
	}
	return 256 << 20
}
