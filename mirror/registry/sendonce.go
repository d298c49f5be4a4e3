package registry

import (
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"weak"
)

// errBodySent refuses a second send of a request that carries a body.
var errBodySent = errors.New("the request's body was already sent once (the registry asked for a fresh token mid-request); the operation starts over")

// sentBodies holds the requests with a body that were sent, weakly: an entry
// goes when its request is collected.
var sentBodies sync.Map // weak.Pointer[http.Request] → struct{}

// sendOnce lets a request that carries a body reach the network once.
// go-containerregistry's bearer transport answers a 401 (an expired token) by
// refreshing the token and sending the same request again, body included: a
// body the first send consumed, and that the first connection's writer may
// still be reading (two writers reading one upload raced, and the registry got
// a truncated blob). The second send fails instead with a transport error,
// which the retry policy retries as a whole operation: a fresh body, with the
// refreshed token.
func sendOnce(req *http.Request) error {
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	k := weak.Make(req)
	if _, loaded := sentBodies.LoadOrStore(k, struct{}{}); loaded {
		return fmt.Errorf("%s %s: %w", req.Method, redactURL(req.URL), errBodySent)
	}
	runtime.AddCleanup(req, func(k weak.Pointer[http.Request]) { sentBodies.Delete(k) }, k)
	return nil
}
