package registry

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/airlock-mirror/airlock/mirror/adaptive"
)

// hostState is everything the client knows of one host it talks to (a
// registry, or the CDN or token server a registry sends requests to), made
// once per host (hostOf) and guarded by its own lock. What is not per host
// stays in the Client: the credentials by repository and the manifest memo.
type hostState struct {
	name string
	// limit is the host's one adaptive bound on the work touching it: the
	// client's requests (hostLimiter) and the copy engine's blob transfers
	// (HostLimit). Set once, when the state is made.
	limit *adaptive.Limit
	// lastProgress is when the host last showed life (unix nanoseconds): an
	// answer, or a body that moved (see Timeouts).
	lastProgress atomic.Int64

	mu sync.Mutex
	// transports are the host's authenticated transports by credential
	// fingerprint: repositories share one in groups (see group).
	transports map[string]*transportGroups
	down       error       // why the host was found unreachable this run (nil: it was not)
	probed     [2]bool     // Probe succeeded: for pull, for push
	mounts     bool        // the host answered a mount with 201 this run
	mountProbe *mountProbe // whether the host honours mounts (honoursMountsOf)
	// sparseProbe: whether it stores sparse indexes (AcceptsSparseIndexes)
	sparseProbe *sparseProbe
	insecure    bool // registries.conf marks the host insecure
	// What the client saw of the host's health lately (see Timeouts and
	// NoteFailure): the last silent timeout, the start of the wait that ended
	// in the first of them, the 5xx answers since the last other answer, and
	// the timeouts in a row by kind of request ("POST upload"), reset by an
	// answer of that kind read to its end.
	strikeAt, silentFrom time.Time
	bad                  int
	lastBad              string
	streak               map[string]int
}

// transportGroups are the transports of one host and credential: the
// repositories of a host share a transport (connections, tokens) in groups
// of reposPerTransport, because a bearer transport adds every repository it
// meets to the scopes of its token requests, which would grow without bound
// over the hundreds of repositories a catalog names on one registry.
type transportGroups struct {
	newest *regHost            // the group repositories join
	fill   int                 // repositories in newest
	of     map[string]*regHost // repository path → its group
}

// regHost is one group's authenticated transport, made on its first request.
type regHost struct {
	mu     sync.Mutex
	rt     http.RoundTripper
	client *http.Client
	reg    name.Registry
	scopes []string // token scopes of the group's expected repositories (Expect); hostState.mu
}

// hostOf returns the state of host, made on first use.
func (r *Client) hostOf(host string) *hostState {
	r.mu.Lock()
	defer r.mu.Unlock()
	hs := r.hosts[host]
	if hs == nil {
		hs = &hostState{name: host, transports: map[string]*transportGroups{},
			limit: newHostLimit(r.opts.MaxPerHost).Logged(r.log, "requests and blob transfers on "+host)}
		hs.progress(time.Now())
		r.hosts[host] = hs
	}
	return hs
}

// eachHost calls f with every host's state.
func (r *Client) eachHost(f func(*hostState)) {
	r.mu.Lock()
	hosts := make([]*hostState, 0, len(r.hosts))
	for _, hs := range r.hosts {
		hosts = append(hosts, hs)
	}
	r.mu.Unlock()
	for _, hs := range hosts {
		f(hs)
	}
}

// group returns the transport group of repository path with credential fp,
// putting a repository met for the first time into the newest group, or into
// a new one when that is full or when fresh is set and it has members
// already; joined says it was met for the first time. hs.mu is held.
func (hs *hostState) group(fp, path string, fresh bool) (g *regHost, joined bool) {
	tg := hs.transports[fp]
	if tg == nil {
		tg = &transportGroups{of: map[string]*regHost{}}
		hs.transports[fp] = tg
	}
	if g, ok := tg.of[path]; ok {
		return g, false
	}
	if tg.newest == nil || tg.fill >= reposPerTransport || (fresh && tg.fill > 0) {
		tg.newest, tg.fill = &regHost{}, 0
	}
	tg.fill++
	tg.of[path] = tg.newest
	return tg.newest, true
}

// hostDown returns why host was found unreachable this run (nil: it was
// not).
func (r *Client) hostDown(host string) error {
	hs := r.hostOf(host)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.down
}
