package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// The update services (oc-mirror's defaults).
const (
	// DefaultOCPURL is OpenShift's update service.
	DefaultOCPURL = "https://api.openshift.com/api/upgrades_info/v1/graph"
	// DefaultOKDURL is OKD's update service.
	DefaultOKDURL = "https://origin-release.ci.openshift.org/graph"
	// URLOverrideEnv names the environment variable that replaces the update
	// service's URL (oc-mirror's).
	URLOverrideEnv = "UPDATE_URL_OVERRIDE"
	// DefaultTimeout is the deadline of one graph request.
	DefaultTimeout = 2 * time.Minute
)

// Fetcher returns the raw graph of a channel for an architecture.
type Fetcher interface {
	Fetch(ctx context.Context, typ, channel, arch string) ([]byte, error)
}

// ClientOptions configure NewClient. The zero value talks to the default
// update services over verified TLS.
type ClientOptions struct {
	// URL replaces the update service of every channel type (--graph-url);
	// empty: $UPDATE_URL_OVERRIDE, else DefaultOCPURL for ocp channels and
	// DefaultOKDURL for okd channels.
	URL string
	// HTTPClient sends the requests (nil: a client with the system's
	// certificates and the environment's proxy). Its own timeout, if any, is
	// kept; Timeout applies to each request in any case.
	HTTPClient *http.Client
	// Timeout is each request's deadline (0: DefaultTimeout).
	Timeout time.Duration
	// Retry is the retry policy (nil: retry's default).
	Retry *retry.Policy
	// MaxBytes caps an answer (0: MaxGraphBytes).
	MaxBytes int64
	// Log receives retries (nil: none).
	Log *slog.Logger
	// Getenv reads the environment (nil: os.Getenv); tests replace it.
	Getenv func(string) string
}

type client struct {
	o    ClientOptions
	http *http.Client
	pol  retry.Policy
}

// NewClient returns a Fetcher that asks the update service with a GET
// URL?channel=C&arch=A, Accept: application/json, each request under a
// deadline and the project's retry policy, each answer size-capped and parsed
// before it is returned.
func NewClient(o ClientOptions) Fetcher {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = MaxGraphBytes
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}}
	}
	return &client{o: o, http: hc, pol: retry.OrDefault(o.Retry)}
}

// ServiceURL is the update service asked for channels of typ.
func (c *client) ServiceURL(typ string) string {
	if c.o.URL != "" {
		return c.o.URL
	}
	if u := c.o.Getenv(URLOverrideEnv); u != "" {
		return u
	}
	if typ == TypeOKD {
		return DefaultOKDURL
	}
	return DefaultOCPURL
}

func (c *client) Fetch(ctx context.Context, typ, channel, arch string) ([]byte, error) {
	base := c.ServiceURL(typ)
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("update service URL %q is not an http(s) URL; give one such as %s (--graph-url or %s)", base, DefaultOCPURL, URLOverrideEnv)
	}
	q := u.Query()
	q.Set("channel", channel)
	q.Set("arch", arch)
	u.RawQuery = q.Encode()
	where := fmt.Sprintf("update graph of channel %s (%s) for %s from %s", channel, typ, arch, redactURL(u))

	body, err := c.pol.GetDocument(ctx, c.o.Log, u.String(), retry.Get{Client: c.http, Timeout: c.o.Timeout, MaxBytes: c.o.MaxBytes, Accept: "application/json"})
	if err != nil {
		return nil, fmt.Errorf("%s: %w; %s", where, err, advice(err))
	}
	if _, err := Parse(body); err != nil {
		return nil, fmt.Errorf("%s: %w; the service did not answer with a Cincinnati graph: check the URL (--graph-url or %s)", where, err, URLOverrideEnv)
	}
	return body, nil
}

// redactURL is u without user information, for messages.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

func advice(err error) string {
	var re *endpoint.RegistryError
	switch {
	case errors.As(err, &re) && (re.StatusCode == http.StatusNotFound || re.StatusCode == http.StatusBadRequest):
		return "check the channel name and the architecture (airlock list releases --channels lists the channels)"
	case errors.As(err, &re) && re.StatusCode >= 500:
		return "the update service failed; try again later, or give a reachable service with --graph-url or " + URLOverrideEnv
	case errors.Is(err, context.DeadlineExceeded):
		return "the update service did not answer in time; check the network or proxy, or give a reachable service with --graph-url or " + URLOverrideEnv
	default:
		return "check the network, the proxy (HTTPS_PROXY) and the URL (--graph-url or " + URLOverrideEnv + "); a disconnected machine needs the graphs a previous run saved"
	}
}

type offline map[string][]byte

// Offline returns a Fetcher of saved graphs (Chosen.Graphs, by GraphFile
// name); a graph not saved is an error naming it.
func Offline(graphs map[string][]byte) Fetcher { return offline(graphs) }

func (o offline) Fetch(_ context.Context, typ, channel, arch string) ([]byte, error) {
	name := GraphFile(typ, arch, channel)
	if b, ok := o[name]; ok {
		return b, nil
	}
	have := make([]string, 0, len(o))
	for k := range o {
		have = append(have, k)
	}
	slices.Sort(have)
	return nil, fmt.Errorf("update graph %s (channel %s, %s, %s) was not saved by the run that made this archive (it has %s); mirror it again from a connected machine with this channel in the configuration",
		name, channel, typ, arch, orNone(have))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
