package registry

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/containers/image/v5/pkg/tlsclientconfig"

	"github.com/airlock-mirror/airlock/mirror/retry"
)

// certsDirs are the folders holding one HOST[:PORT] folder of certificates per
// registry, in the order containers/image (podman, skopeo) and docker read them.
var certsDirs = func() []string {
	var dirs []string
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, ".config", "containers", "certs.d"))
	}
	return append(dirs, "/etc/containers/certs.d", "/etc/docker/certs.d")
}

// certRouter gives each registry host the TLS configuration of its certificate
// folder: Options.CertDir (--src-cert-dir / --dest-cert-dir) for every host
// when set, otherwise the first certs.d/HOST folder that exists. A folder holds
// *.crt files (certificate authorities trusted besides the system's or
// Options.RootCAs) and *.cert/*.key pairs (a client certificate), as for skopeo.
type certRouter struct {
	base    *http.Transport
	certDir string // Options.CertDir
	// insecure reports the hosts whose certificates are not verified
	// (registries.conf insecure = true).
	insecure func(host string) bool
	// tmpl is a copy of base made before base served a request: the transports
	// of certificate folders are cloned from it (a transport in use changes
	// its TLS configuration on its first request, so cloning base would race).
	tmpl *http.Transport

	mu    sync.Mutex
	byDir map[string]http.RoundTripper
}

func (c *certRouter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		return c.base.RoundTrip(req)
	}
	rt, err := c.transport(req.URL.Host)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, retry.Permanent(err)
	}
	return rt.RoundTrip(req)
}

// dirFor returns the certificate folder of host ("" for none).
func (c *certRouter) dirFor(host string) string {
	if c.certDir != "" {
		return c.certDir
	}
	for _, d := range certsDirs() {
		p := filepath.Join(d, host)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return p
		}
	}
	return ""
}

func (c *certRouter) transport(host string) (http.RoundTripper, error) {
	dir := c.dirFor(host)
	skip := c.insecure != nil && c.insecure(host)
	if dir == "" && !skip {
		return c.base, nil
	}
	key := fmt.Sprint(skip, "\x00", dir)
	c.mu.Lock()
	defer c.mu.Unlock()
	if rt, ok := c.byDir[key]; ok {
		return rt, nil
	}
	if dir == "" {
		tr := c.tmpl.Clone()
		tr.TLSClientConfig.InsecureSkipVerify = true //nolint:gosec // registries.conf insecure = true
		c.remember(key, tr)
		return tr, nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("certificate folder %s (for %s): not a folder; give a folder of *.crt (and *.cert/*.key) files", dir, host)
	}
	tlsc := c.tmpl.TLSClientConfig.Clone()
	if tlsc.RootCAs != nil {
		tlsc.RootCAs = tlsc.RootCAs.Clone()
	}
	if err := tlsclientconfig.SetupCertificates(dir, tlsc); err != nil {
		return nil, fmt.Errorf("certificates in %s (for %s): %w", dir, host, err)
	}
	tlsc.InsecureSkipVerify = tlsc.InsecureSkipVerify || skip
	tr := c.tmpl.Clone()
	tr.TLSClientConfig = tlsc
	c.remember(key, tr)
	return tr, nil
}

func (c *certRouter) remember(key string, tr http.RoundTripper) {
	if c.byDir == nil {
		c.byDir = map[string]http.RoundTripper{}
	}
	c.byDir[key] = tr
}
