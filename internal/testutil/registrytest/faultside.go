package registrytest

import "testing"

// Side says which end of a copy a fault proxy stands in front of.
type Side string

// The two ends of a copy.
const (
	SourceSide      Side = "source"
	DestinationSide Side = "destination"
)

// ProxySide starts a fault proxy in front of src or dst (as side says) and
// returns it with the source and destination hosts a run should use: the
// proxy's host on that side, the registry's own on the other.
func ProxySide(t testing.TB, side Side, src, dst *Registry, plan FaultPlan) (proxy *Proxy, srcHost, dstHost string) {
	t.Helper()
	srcHost, dstHost = src.Host(), dst.Host()
	switch side {
	case SourceSide:
		proxy = NewFaultProxy(t, srcHost, plan)
		srcHost = proxy.Host()
	case DestinationSide:
		proxy = NewFaultProxy(t, dstHost, plan)
		dstHost = proxy.Host()
	default:
		t.Fatalf("registrytest.ProxySide: side %q is neither %q nor %q", side, SourceSide, DestinationSide)
	}
	return proxy, srcHost, dstHost
}
