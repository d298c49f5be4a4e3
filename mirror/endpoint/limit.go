package endpoint

import "context"

// HostLimit is the one adaptive bound on the work touching one registry host
// at once (an adaptive.Limit). The registry client keeps one per host and
// counts every request under it until its answer's headers arrive; the copy
// engine counts each blob transfer under the same bound for its whole length
// (the source read and the destination write), and the requests a transfer
// makes take no slot of their own (InSlot).
type HostLimit interface {
	// AcquireFirst waits for a slot (before operations waiting for an
	// ordinary one), or until ctx ends.
	AcquireFirst(ctx context.Context) error
	// Release frees a slot; ok says the operation went well.
	Release(ok bool)
	// Spare reports whether a slot is free that nobody waits for, and a
	// channel closed when that may change.
	Spare() (bool, <-chan struct{})
	// RaiseCeiling lifts the most the bound may grow to, to at least n.
	RaiseCeiling(n int)
}

// HostLimiter is implemented by endpoints that bound the work on each host
// they talk to (registry.Client). The copy engine runs its blob transfers
// under those bounds instead of keeping bounds of its own, so that a host has
// one.
type HostLimiter interface {
	// HostLimit returns the bound of host, or nil when the endpoint keeps
	// none for it (the copy engine then keeps its own).
	HostLimit(host string) HostLimit
}

type inSlotKey struct{}

// InSlot returns ctx marked as the context of an operation that holds a slot
// of every host it works on (a blob transfer the copy engine started): the
// requests made under it take no slot of their own, so that they never wait
// for the slots their operation holds, or for others while holding those.
func InSlot(ctx context.Context) context.Context {
	return context.WithValue(ctx, inSlotKey{}, true)
}

// HasSlot reports whether ctx was marked by InSlot.
func HasSlot(ctx context.Context) bool {
	held, _ := ctx.Value(inSlotKey{}).(bool)
	return held
}
